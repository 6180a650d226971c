//! A weather agent whose production code knows only async-openai (tools, streaming, its
//! own retry policy), and its simulation: [`agent`] is what ships; [`scenario`] runs it
//! unchanged inside Umi through `umi_dst::adapters::async_openai`.

pub mod agent;
pub mod scenario;
