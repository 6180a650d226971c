//! SIGINT and SIGTERM for `dst sweep`: the first stops the sweep as its time budget does
//! (the engine sees the signal's number in `SweepOptions::interrupt`, finishes or
//! abandons the runs in flight, and the command writes the table, JSON and JUnit marked
//! incomplete with the command that resumes the range); a second one ends the process
//! at once with 128 + the signal's number (130 for Ctrl-C).
//!
//! The handlers only store into atomics (signal-hook's flag actions, registered in the
//! order signal-hook documents for a double Ctrl-C): no unsafe code here. The second
//! signal exits from within its handler, so it works however wedged the rest of the
//! process is; the worker processes, in their own process group and so not signalled
//! by the terminal, end with it on their own side (`parent_watch.rs`: the kernel's
//! parent-death signal, or a poll of the parent's id), which also covers a parent
//! that dies any other way (SIGKILL, a crash), as no handler here could.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;

/// The exit code of a sweep stopped by `signal` (the shell's convention: 128 + number).
pub(crate) fn exit_code_for_signal(signal: usize) -> i32 {
    128 + i32::try_from(signal).unwrap_or(0)
}

/// Installs the handlers; the returned atomic holds the number of the first signal
/// received (0 until then).
pub(crate) fn install() -> std::io::Result<Arc<AtomicUsize>> {
    let received = Arc::new(AtomicUsize::new(0));
    let armed = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        // Registered first, so it sees `armed` as the previous signal left it.
        flag::register_conditional_shutdown(
            signal,
            exit_code_for_signal(signal as usize),
            Arc::clone(&armed),
        )?;
        flag::register_usize(signal, Arc::clone(&received), signal as usize)?;
        flag::register(signal, Arc::clone(&armed))?;
    }
    Ok(received)
}
