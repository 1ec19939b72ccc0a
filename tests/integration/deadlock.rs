//! Runs that cannot finish are recognised and reported, not spun to the
//! time limit.

use poolsim::engine::{self, Outcome, SimOptions};
use poolsim::policy_file::resolve_policy;
use poolsim::scenario::load::parse_scenario;
use poolsim::trace::NullSink;

fn outcome(text: &str) -> Outcome {
    let s = parse_scenario(text, "deadlock.toml").unwrap_or_else(|e| panic!("{e}"));
    let p = resolve_policy(&s.pool.policy).unwrap();
    engine::simulate(&s, &p, &mut NullSink, &SimOptions::default()).outcome
}

#[test]
fn sync_over_async_at_max_threads_is_a_deadlock_with_the_blocked_items() {
    // Four pool threads, each in Task.Delay(100).Wait(); the timers' callbacks
    // need a pool thread and max_threads forbids a fifth.
    let text = "[machine]\ncores = 2\n[pool]\npolicy = \"net5\"\nmax_threads = 4\n\
        [[group]]\ncount = 10\nbody = [ { wait_ms = 100 } ]\n";
    match outcome(text) {
        Outcome::Deadlock {
            at,
            unfinished,
            blocked,
        } => {
            assert!(at.as_ms_f64() < 5_000.0, "found early: {at}");
            assert!(unfinished > 0);
            assert_eq!(blocked.len(), 4);
            assert!(blocked.iter().all(|(_, item)| item.is_some()));
        }
        other => panic!("expected a deadlock, got {other:?}"),
    }
}

#[test]
fn a_parallel_call_on_a_pool_thread_can_deadlock_too() {
    // Parallel.For inside Task.Run with one pool thread: the caller joins its
    // replicas, which wait for timer callbacks that need a thread.
    let text = "[machine]\ncores = 1\n[pool]\npolicy = \"net6\"\nmax_threads = 1\n\
        [[group]]\ncount = 8\nsubmit = \"parallel-for\"\nfrom = \"pool\"\nbody = [ { wait_ms = 10 } ]\n";
    assert!(
        matches!(outcome(text), Outcome::Deadlock { .. }),
        "{:?}",
        outcome(text)
    );
}

#[test]
fn the_same_work_with_room_to_grow_completes() {
    let text = "[machine]\ncores = 2\n[pool]\npolicy = \"net5\"\nmax_threads = 40\n\
        [[group]]\ncount = 10\nbody = [ { wait_ms = 100 } ]\n";
    assert_eq!(outcome(text), Outcome::Completed);
}

#[test]
fn the_cli_reports_a_deadlock_and_exits_3() {
    let dir = std::env::temp_dir().join(format!("poolsim-deadlock-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("dl.toml");
    std::fs::write(
        &file,
        "[machine]\ncores = 2\n[pool]\npolicy = \"net5\"\nmax_threads = 4\n\
         [[group]]\ncount = 10\nbody = [ { wait_ms = 100 } ]\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_poolsim"))
        .args(["run", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("DEADLOCK") && out.contains("max_threads"),
        "{out}"
    );
}
