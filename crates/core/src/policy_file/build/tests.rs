//! Unit tests of stage two: the value checkers, and whole policy files
//! through `parse_policy_in` with no file system behind it.

use super::check::{first_tick, thread_count};
use super::*;
use crate::policy::config::{FirstTick, Spread, ThreadCount, TimerQueueChoice};
use crate::policy_file::raw::{FirstTickValue, NumberOrText};
use crate::policy_file::{NoFiles, parse_policy_in};
use crate::scenario::raw::Number;
use crate::time::SimDuration;

/// A policy file's text parsed with no file system behind it.
fn parse_policy(
    text: &str,
    file: &str,
) -> Result<crate::policy::PolicyConfig, crate::diagnostics::LoadError> {
    parse_policy_in(text, file, &NoFiles)
}
use crate::policy_file::test_support::{builtin_text, net_classic};

#[test]
fn thread_counts_accept_numbers_and_multiples_of_cores() {
    let n = |s: &str| thread_count(&NumberOrText::Text(s.to_string()));
    assert_eq!(n("cores"), Ok(ThreadCount::PerCore(1)));
    assert_eq!(n("4*cores"), Ok(ThreadCount::PerCore(4)));
    assert_eq!(n(" 2 * Cores "), Ok(ThreadCount::PerCore(2)));
    assert!(n("0*cores").is_err());
    assert!(n("cores*2").is_err());
    assert!(n("-1*cores").is_err());
    assert!(n("many").is_err());
    assert_eq!(
        thread_count(&NumberOrText::Number(Number::Integer(8))),
        Ok(ThreadCount::Fixed(8))
    );
    assert!(thread_count(&NumberOrText::Number(Number::Float(8.5))).is_err());
}

#[test]
fn first_tick_is_a_duration_random_or_measured_quantiles() {
    let t = |s: &str| first_tick(&FirstTickValue::Text(s.to_string()));
    assert_eq!(t("random"), Ok(FirstTick::Random));
    assert_eq!(t(" Random "), Ok(FirstTick::Random));
    assert!(t("soon").unwrap_err().message.contains("\"random\""));
    assert_eq!(
        first_tick(&FirstTickValue::Number(Number::Float(0.5))),
        Ok(FirstTick::After(SimDuration::from_us(500)))
    );
    assert!(first_tick(&FirstTickValue::Number(Number::Integer(-1))).is_err());
    let list = |v: &[i64]| {
        first_tick(&FirstTickValue::List(
            v.iter().map(|&n| Number::Integer(n)).collect(),
        ))
    };
    assert_eq!(
        list(&[800, 850, 900]),
        Ok(FirstTick::Measured(Spread::from_quantiles(vec![
            SimDuration::from_ms(800),
            SimDuration::from_ms(850),
            SimDuration::from_ms(900),
        ])))
    );
    assert!(list(&[900, 800]).unwrap_err().message.contains("decrease"));
    assert!(list(&[900]).is_err());
}

#[test]
fn every_missing_constant_is_named() {
    let text = net_classic()
        .replace("period_ms = 500", "")
        .replace("bias = 0.15", "")
        .replace("leave_at_quantum = true", "");
    let e = parse_policy(&text, "p.toml").unwrap_err();
    let paths: Vec<_> = e.diagnostics().filter_map(|d| d.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "gate.period_ms",
            "hill_climbing.bias",
            "dispatch.leave_at_quantum"
        ]
    );
}

#[test]
fn linux_policies_draw_a_timers_queue_and_name_the_choices() {
    for name in ["coreclr3-linux.toml", "net8.toml"] {
        let p = parse_policy(builtin_text(name), name).unwrap();
        assert_eq!(
            p.timers.queue_of,
            TimerQueueChoice::ThreadProcessor,
            "{name}"
        );
        let text = builtin_text(name).replace(
            "queue_of = \"thread-processor\"",
            "queue_of = \"creating-thread\"",
        );
        let p = parse_policy(&text, name).unwrap();
        assert_eq!(p.timers.queue_of, TimerQueueChoice::CreatingThread);
    }
    let text = builtin_text("net8.toml")
        .replace("queue_of = \"thread-processor\"", "queue_of = \"by-cpu\"");
    let e = parse_policy(&text, "p.toml").unwrap_err();
    assert_eq!(e.path(), Some("timers.queue_of"));
    assert!(e.to_string().contains("creating-thread"), "{e}");
}

#[test]
fn net20_refuses_a_request_cap() {
    let sp1 = builtin_text("net20-sp1.toml");
    assert!(parse_policy(sp1, "net20-sp1.toml").is_ok());
    let capped = sp1.replace(
        "max_outstanding_requests_per_core = 1024",
        "max_outstanding_requests_per_core = 1",
    );
    assert_ne!(capped, sp1);
    let e = parse_policy(&capped, "p.toml").unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
    assert_eq!(e.path(), Some("dispatch.max_outstanding_requests_per_core"));
    assert!(e.to_string().contains("no managed request cap"), "{e}");
}

#[test]
fn the_gate_start_is_one_of_its_words_and_net20_has_only_at_request() {
    let classic = builtin_text("net-classic.toml");
    let with_pool = classic.replace("start = \"at-request\"", "start = \"with-first-thread\"");
    assert_ne!(with_pool, classic);
    let p = parse_policy(&with_pool, "p.toml").unwrap();
    assert_eq!(p.gate.start, GateStart::WithFirstThread);
    let unknown = classic.replace("start = \"at-request\"", "start = \"at-boot\"");
    let e = parse_policy(&unknown, "p.toml").unwrap_err();
    assert_eq!(e.path(), Some("gate.start"));
    assert!(e.to_string().contains("with-first-thread"), "{e}");
    let sp1 = builtin_text("net20-sp1.toml");
    let e = parse_policy(
        &sp1.replace("start = \"at-request\"", "start = \"with-first-thread\""),
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
    assert_eq!(e.path(), Some("gate.start"));
    assert!(e.to_string().contains("at-request"), "{e}");
}

#[test]
fn a_missing_table_is_one_error() {
    let text = match net_classic().find("[timers]") {
        Some(i) => &net_classic()[..i],
        None => panic!("no [timers]"),
    };
    let e = parse_policy(text, "p.toml").unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
    assert_eq!(e.path(), Some("timers"));
}

#[test]
fn model_tables_go_with_their_model() {
    let net6 = builtin_text("net6.toml");
    // Each model-specific table, refused under another model.
    let e = parse_policy(
        &net6.replace("model = \"portable\"", "model = \"mono\""),
        "p.toml",
    )
    .unwrap_err();
    let paths: Vec<_> = e.diagnostics().filter_map(|d| d.path.clone()).collect();
    assert_eq!(paths, ["mono", "blocking"], "{e}");
    assert!(
        e.to_string()
            .contains("missing table `[mono]`: model = \"mono\" needs it")
    );
    assert!(e.to_string().contains("policies/mono.toml"));
    assert!(
        e.to_string()
            .contains("`[blocking]` is for model = \"portable\"; this policy's model is \"mono\"")
    );
    // An unknown model: one error, not one per table.
    let e = parse_policy(
        &net6.replace("model = \"portable\"", "model = \"portabel\""),
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(e.len(), 1, "{e}");
}

#[test]
fn blocking_delays_follow_the_runtime_clamps() {
    let net6 = builtin_text("net6.toml");
    let e = parse_policy(
        &net6.replace("max_delay_ms = 250", "max_delay_ms = 501"),
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(e.path(), Some("blocking.max_delay_ms"));
    assert!(
        e.to_string().contains("clamps MaxDelayMs to [1, 500]"),
        "{e}"
    );
    let e = parse_policy(
        &net6.replace("delay_step_ms = 25", "delay_step_ms = 300"),
        "p.toml",
    )
    .unwrap_err();
    assert_eq!(e.path(), Some("blocking.delay_step_ms"));
    assert!(
        e.message().contains("greater than max_delay_ms (250)"),
        "{e}"
    );
    let e = parse_policy(
        &net6.replace("delay_step_ms = 25", "delay_step_ms = 0.5"),
        "p.toml",
    )
    .unwrap_err();
    assert!(e.message().contains("at least 1 ms"), "{e}");
}

#[test]
fn never_panics_on_mangled_policy() {
    // Mutations at every token boundary outside comments (net6 has
    // every core table and a model table; the wrapper has the rest).
    for file in ["net6.toml", "net-classic-throttled.toml"] {
        let text = builtin_text(file);
        let mut previous = '\n';
        let mut in_comment = false;
        for (i, c) in text.char_indices() {
            let boundary = matches!(previous, ' ' | '=' | '[' | '"' | '\n' | ',');
            in_comment = (in_comment || c == '#') && c != '\n';
            previous = c;
            if in_comment || !boundary {
                continue;
            }
            for sub in ["", "\"", "[", "=", "-", "1e400", "\n", "cores", "0"] {
                let mut t = String::with_capacity(text.len() + 8);
                t.push_str(&text[..i]);
                t.push_str(sub);
                t.push_str(&text[i + c.len_utf8()..]);
                let _ = parse_policy(&t, "m.toml");
            }
        }
    }
}

#[test]
fn first_call_costs_are_keyed_by_the_api_and_checked_as_quantiles() {
    use crate::scenario::Submit;
    let with = |table: &str| {
        let text = format!(
            "{}\n[library]\nrange_is_list = false\n\n[library.first_call_ms]\n{table}\n",
            builtin_text("net-classic.toml")
        );
        parse_policy(&text, "p.toml")
    };
    let p = with("parallel-for = [4, 5, 6]\nplinq = 12.5").unwrap();
    let costs = &p.library.first_call;
    assert_eq!(
        costs
            .of(Submit::ParallelFor)
            .map(|s| s.quantiles().to_vec()),
        Some(vec![
            SimDuration::from_ms(4),
            SimDuration::from_ms(5),
            SimDuration::from_ms(6)
        ])
    );
    assert_eq!(
        costs.of(Submit::Plinq).map(|s| s.min()),
        Some(SimDuration::from_us(12_500))
    );
    // An API left out costs nothing.
    assert!(costs.of(Submit::ParallelForEach).is_none());
    assert!(costs.of(Submit::TaskRun).is_none());
    // A policy without the table has no costs at all.
    let plain = parse_policy(net_classic(), "net-classic.toml").unwrap();
    assert!(plain.library.first_call.costs.is_empty());
    // Quantiles that decrease are refused with the key's path.
    let e = with("parallel-invoke = [6, 5]").unwrap_err().to_string();
    assert!(e.contains("library.first_call_ms.parallel-invoke"), "{e}");
    assert!(e.contains("decrease"), "{e}");
    // An API the table does not know is refused.
    let e = with("parallel-while = 3").unwrap_err().to_string();
    assert!(e.contains("parallel-while"), "{e}");
}
