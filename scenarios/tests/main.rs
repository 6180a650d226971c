//! umi-scenarios' integration tests: the registry, the canaries, and the sweep engine
//! driven through the real scenarios and the `dst` binary. Each scenario's replay of its
//! seed corpus and a fixed range is the test its declaration writes in the library
//! (`DST_SEED=N cargo test -p umi-scenarios -- <scenario>` runs it).

/// The registry's order; each canary found within 100 seeds; the cassette kept fresh.
mod scenarios;

/// The deep canaries: each planted bug fires with all its events in order and never
/// without one; the runs kept in `seeds/` still find it.
mod deep_canaries;

/// Paths: a seed alone keeps the trace hashes pinned before paths existed; a branch
/// changes the run after it and replays.
mod paths;

/// A storage bug planted for each kind of loss (batch, note, entity, delete, link,
/// content) is found by the memory scenarios within 200 seeds of the default sweep.
mod planted;

/// The liveness phase in a scenario: `outbox_drains` with a drainer that gives up is
/// found within a few seeds as a liveness failure naming the outbox, and its replay
/// line and JSON say `liveness`; the correct drainer passes the same seeds.
mod liveness;

/// `dst minimize` on a path: the fewest branch points (one of three here), then the
/// smallest fault set with the path fixed; a seed alone as before; `--path` beside
/// `--seed`.
mod minimize_paths;

/// The default sweep is clean, finds the canary, and hits every coverage mark of every
/// scenario.
mod coverage;

/// The sweep engine's promises: `--jobs 1` and `--jobs 2` give identical trace hashes;
/// shards cover exactly the unsharded seeds with identical results; minimization keeps
/// the failure; a killed sweep leaves `seeds/` parseable and a report of how far it got;
/// Ctrl-C writes the reports and prints the command that resumes the range.
mod sweep;

/// Seeds in worker processes: a seed that aborts, overflows its stack, exits, allocates
/// without bound or busy-loops is named and recorded, and the sweep (or `dst replay`,
/// or `Simulation::run`) goes on or fails by name instead of dying or hanging.
mod workers;

/// The distributed path: 16 `dst sweep --shard i/16` processes merged by `dst merge
/// --require-complete` equal the unsharded sweep, seed for seed.
mod distributed;

/// `dst compare` on reports the `dst` binary wrote: the same sweep twice is no change,
/// a doctored pass rate is a regression naming its scenario, other seeds are refused.
mod compare;
/// `dst replay --html` and `dst sweep --html`: a failing canary seed's page draws one
/// mark per event in its lane with the failure marker; the sweep page names the command
/// that renders each failure's page; an unwritable path is a usage error.
mod html;

/// What the `dst serve` tests share (their runtime).
mod support;

/// `dst serve` over real HTTP: order-independent answers, envelopes, limits, and
/// umi-core's own clients as its users.
mod serve;

/// What `dst serve` promises frameworks: one answer streamed or whole, reruns under a
/// fresh scope, every format and any model with no flags.
mod serve_promises;

/// `dst serve` for an agent on Umi's simulated clock (`x-umi-clock-us`): the drawn
/// Retry-After, dates on the agent's clock, `x-umi-timing`, no response told apart.
mod serve_clock;

/// `dst serve`'s MCP server at `/mcp`: umi-core's MCP client over real HTTP, reruns under
/// a fresh scope, MCP's faults as typed errors, the transport's refusals.
mod serve_mcp;

/// Faults aimed over `dst serve`: at one tool only, at the 2nd model call of a scope
/// only, and a rule naming no served operation refused by name.
mod serve_aim;

/// Paths over `dst serve`: the seed's answers before a branch's arrival, another
/// stream's from it on, the same path twice alike; the marks a scope reached.
mod serve_paths;

/// `dst serve --cassette`: a recording of `dst serve` served back byte for byte under
/// other seeds, faults and misses in the providers' envelopes.
mod serve_cassette;

/// The agent's own OpenTelemetry spans in `dst serve`: `POST /v1/traces` (protobuf, JSON,
/// gzip), scopes, the bound, refusals; `GET /umi/spans`; `GET /umi/trace?format=otlp`.
mod serve_spans;

/// `dst record` and `dst cassette` run as users run them: a proxy recording real HTTP
/// with every planted key removed, an upstream that is down, HAR import, `check` and
/// `diff` on the files written.
mod cassette_cli;

/// The `dst` binary's own face: `--version`, `--help` naming every served format, one
/// flag name for a listen address.
mod cli;

/// `dst explore` as users run it: refusals by name, a canary found with its replay
/// line, shards sharing a frontier directory and merged.
mod explore_cli;

/// No library code names a wire format's variant outside its crate's registry.
mod format_seam;

/// No library function past 70 lines, but for an allow-list that only shrinks.
mod tidy;

/// No scenario reads its run's trace tail, which a sweep's runs do not keep.
mod tail_reads;

/// No catch-all `match` arm on an enum of the workspace's own, but for an allow-list
/// that only shrinks.
mod wildcard_arms;

/// No import circle between the modules of any library crate or the scenarios' library,
/// with an empty allow-list; ARCHITECTURE.md's "Layers" names what sits below what.
mod circles;

/// umi-dst's public surface (public modules, re-exports, exported macros) is the golden
/// file's, and no document or source names a path through a private module.
mod public_surface;

/// The guide's table of contents matches its headings, ARCHITECTURE.md lists every ADR,
/// and no document cites a path that is not in the repository.
mod docs;
