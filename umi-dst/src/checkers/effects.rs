//! Oracles over a run's side effects (the simulated tools' [`EffectLedger`]): an effect
//! applied twice for one logical call (after a cut stream, a retried turn, a router
//! fallback, a timeout the agent retried), and an effect for a call the model never made.
//!
//! A logical call is the model's call id; a tool that honours idempotency keys also
//! makes one logical call of every call carrying the same key (its repeats apply
//! nothing, and are fine). The model's calls come from SimLLM
//! (`SimLlm::tool_call_ids`); over a wire format that renames call ids (Anthropic's
//! `toolu_…`), pass the ids the format's server sent instead.

use std::collections::{BTreeMap, BTreeSet};

use crate::simulation::Violation;
use crate::tools::{Effect, EffectLedger};

/// What went wrong with the effects, if anything.
pub fn check_effects(ledger: &EffectLedger, model_calls: &[String]) -> Result<(), Violation> {
    if ledger.overflowed() {
        return Err(Violation::new(format!(
            "more than {} side effects in one run: a runaway",
            crate::tools::EFFECTS_MAX
        )));
    }
    let effects = ledger.effects();
    if let Some(twice) = applied_twice(&effects) {
        return Err(Violation::new(twice));
    }
    let made: BTreeSet<&str> = model_calls.iter().map(String::as_str).collect();
    if let Some(effect) = effects.iter().find(|e| !made.contains(e.call_id.as_str())) {
        return Err(Violation::new(format!(
            "{} did an effect for call {:?}, which the model never made (arguments {})",
            effect.tool, effect.call_id, effect.arguments
        )));
    }
    Ok(())
}

/// The first logical call whose effect was applied more than once, described.
pub fn applied_twice(effects: &[Effect]) -> Option<String> {
    let mut by_call: BTreeMap<(&str, &str), Vec<&Effect>> = BTreeMap::new();
    for effect in effects.iter().filter(|e| e.applied) {
        by_call
            .entry((effect.tool.as_str(), effect.call_id.as_str()))
            .or_default()
            .push(effect);
    }
    by_call
        .into_iter()
        .find(|(_, done)| done.len() > 1)
        .map(|((tool, call), done)| {
            let at: Vec<String> = done.iter().map(|e| format!("{:?}", e.at)).collect();
            format!(
                "{tool} applied its effect {} times for one call {call:?} (at {}; arguments {})",
                done.len(),
                at.join(", "),
                done[0].arguments
            )
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn effect(call: &str, applied: bool) -> Effect {
        Effect {
            tool: "pay".into(),
            call_id: call.into(),
            idempotency_key: None,
            arguments: "{}".into(),
            at: Duration::from_millis(7),
            applied,
        }
    }

    #[test]
    fn twice_for_one_call_is_found_and_a_skipped_repeat_is_not() {
        assert!(applied_twice(&[effect("a", true), effect("b", true)]).is_none());
        assert!(applied_twice(&[effect("a", true), effect("a", false)]).is_none());
        let found = applied_twice(&[effect("a", true), effect("b", true), effect("a", true)]);
        assert!(found.unwrap().contains("2 times for one call \"a\""));
    }
}
