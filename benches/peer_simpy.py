#!/usr/bin/env python3
"""A SimPy peer of poolsim's bench scenarios, for a speed comparison only.

Used by `cargo run --release --example bench`, which runs it and divides its
wall time by poolsim's on the same workload. It is not a validated model of
any pool and is not compared for results, only timed.

The pool, gate only (no hill climbing, no local queues, no thread requests,
no timers): `cores` worker threads from the start (min threads = cores), one
global FIFO queue, and a gate thread that every 500 ms adds a worker when
work is queued and no worker dequeued for more than 500 ms. Each item is
`cpu_ms` of CPU on a core (a `simpy.Resource` of `cores` slots: FIFO, not
processor sharing; the bench keeps threads <= cores, where the two agree).
Idle workers wait on an event; an arrival wakes one idle worker.

The queue is a `collections.deque`: SimPy's `Store` keeps its items in a list
and takes them with `list.pop(0)`, which is O(n) per item, so a backlog of N
items at t = 0 costs O(N^2) with a `Store` (minutes at 1 M items). The deque
keeps the peer linear, so the comparison times SimPy's event loop, not a
quadratic queue.

Usage: peer_simpy.py N {spread|backlog} [--cores 16] [--cpu-ms 5] [--every-ms 0.5]
Prints: `items=N threads=T sim_end_ms=E wall_s=W`.
"""

import argparse
import collections
import sys
import time

try:
    import simpy
except ImportError:  # the bench checks for this first
    print("SimPy not installed", file=sys.stderr)
    sys.exit(3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("arrival", choices=["spread", "backlog"])
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--cpu-ms", type=float, default=5.0)
    ap.add_argument("--every-ms", type=float, default=0.5)
    args = ap.parse_args()

    # Timed from the start of the model, as poolsim's run is (its time
    # includes creating the items of a backlog).
    start = time.perf_counter()
    env = simpy.Environment()
    cpu = simpy.Resource(env, capacity=args.cores)
    queue = collections.deque()
    idle = collections.deque()  # events of idle workers
    state = {"done": 0, "last_dequeue": 0.0, "threads": 0}
    finished = env.event()

    def worker():
        state["threads"] += 1
        while True:
            if not queue:
                wake = env.event()
                idle.append(wake)
                yield wake
                continue
            queue.popleft()
            state["last_dequeue"] = env.now
            with cpu.request() as req:
                yield req
                yield env.timeout(args.cpu_ms)
            state["done"] += 1
            if state["done"] == args.n:
                finished.succeed()

    def wake_one():
        if idle:
            idle.popleft().succeed()

    def spread():
        for _ in range(args.n):
            queue.append(1)
            wake_one()
            yield env.timeout(args.every_ms)

    def gate():
        while True:
            yield env.timeout(500.0)
            if queue and env.now - state["last_dequeue"] > 500.0:
                env.process(worker())

    for _ in range(args.cores):
        env.process(worker())
    if args.arrival == "backlog":
        queue.extend(1 for _ in range(args.n))
    else:
        env.process(spread())
    env.process(gate())

    env.run(until=finished)
    wall = time.perf_counter() - start
    print(
        f"items={args.n} threads={state['threads']} sim_end_ms={env.now:.1f} wall_s={wall:.3f}"
    )


if __name__ == "__main__":
    main()
