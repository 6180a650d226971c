//! The `dst` binary as a user first meets it: `dst --version` and `dst -V` say the
//! crate's version; `dst serve --help` names every format served by default (from the
//! registry, so a format added there cannot be left out of the help, as Gemini once
//! was); a listen address is `--bind` for every command, `dst record`'s old `--listen`
//! still accepted but no longer shown.

use std::process::{Command, Output};

use umi_dst::serve::{DEFAULT_PROFILES, format_path};

fn dst(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dst"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn dst_says_its_version() {
    for flag in ["--version", "-V"] {
        let output = dst(&[flag]);
        assert!(output.status.success(), "{flag}: {output:?}");
        assert_eq!(
            stdout(&output).trim(),
            format!("dst {}", env!("CARGO_PKG_VERSION")),
            "{flag}"
        );
    }
}

/// Every default format by its profile name and path, in the long help and in the
/// top-level summary of `serve`.
#[test]
fn serve_help_names_every_served_format() {
    let help = stdout(&dst(&["serve", "--help"]));
    assert!(help.contains("Usage: dst serve"), "{help}");
    for profile in DEFAULT_PROFILES {
        let named = format!("`{}` ({})", profile.name(), format_path(profile));
        assert!(
            help.contains(&named),
            "{named} is not in `dst serve --help`:\n{help}"
        );
    }
    assert!(help.contains("--allow-origin"), "{help}");
    let summary = stdout(&dst(&["--help"]));
    assert!(summary.contains("Gemini"), "{summary}");
}

/// `--bind` is the listen flag of `dst serve` and `dst record`; `dst record --listen`
/// still parses (the cassette's refusal comes after the flags were read) and is not
/// listed, while a misspelt flag is clap's usage error.
#[test]
fn a_listen_address_is_bind_everywhere_and_listen_still_works() {
    for command in ["serve", "record"] {
        let help = stdout(&dst(&[command, "--help"]));
        assert!(help.contains("--bind <ADDR>"), "dst {command}:\n{help}");
        assert!(!help.contains("--listen"), "dst {command}:\n{help}");
    }
    let dir = std::env::temp_dir().join(format!("umi-cli-bind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cassette = dir.join("taken.jsonl");
    std::fs::write(&cassette, "").unwrap();
    let cassette = cassette.to_str().unwrap();
    for flag in ["--bind", "--listen"] {
        let output = dst(&[
            "record",
            "--upstream",
            "http://127.0.0.1:9",
            "--cassette",
            cassette,
            flag,
            "127.0.0.1:0",
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("the file exists (pass --append"),
            "{flag}: {stderr}"
        );
    }
    let typo = dst(&[
        "record",
        "--upstream",
        "u",
        "--cassette",
        cassette,
        "--lisen",
        "x",
    ]);
    assert!(
        String::from_utf8_lossy(&typo.stderr).contains("unexpected argument '--lisen'"),
        "{typo:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
