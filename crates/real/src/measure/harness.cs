// poolsim CLR measurement harness.
//
// Executes a poolsim measurement *plan* on the real managed thread pool and
// writes the *measured trace* that `poolsim measure` reads back. The protocol
// (plan in, trace out, exit codes) is docs/measure-plan.md (version 1).
//
// One source file, C# 7-era syntax, .NET Framework 4.x API only, so the same
// compiled assembly runs on Mono 6.8, .NET Core 3.1 and .NET 8. APIs that only
// some runtimes have (ThreadPool.ThreadCount, RuntimeInformation) are reached
// by reflection.
//
// Compile (Mono's C# compiler; its default references include System.Core,
// and the file compiles without warnings):
//   mcs -optimize+ -out:harness.exe harness.cs
// Run:
//   Mono:     mono harness.exe PLAN OUT
//   CoreCLR:  cp harness.exe harness.dll
//             DOTNET_ROOT=D D/dotnet exec --runtimeconfig rc.json harness.dll PLAN OUT
//   with rc.json
//   {"runtimeOptions":{"tfm":"netcoreapp3.1","framework":{"name":"Microsoft.NETCore.App",
//    "version":"3.1.0"},"configProperties":{"System.Globalization.Invariant":true}}}
//   (.NET 8: "net8.0" / "8.0.0").
// Exit codes: 0 done; 2 malformed plan or unsupported on this runtime (one
// line on stderr); 3 timeout_ms passed (trace written without `end`);
// 1 usage, I/O or internal error.
//
// Notes on how the harness reads the protocol:
// - Everything from a `#` token to the end of a line is a comment.
// - Every group gets a dedicated submitter thread `submitter G` (created,
//   with the sampler thread, before t0) that waits for the group's start and
//   submits (from=main) or queues the pool submitter (from=pool); the main
//   thread only probes or waits. Dedicated threads stay alive (blocked)
//   until exit so the os-tasks count is not disturbed by their exit.
// - Several `probe` lines: the first loop runs on the main thread, each
//   further one on a dedicated thread `probe K`; their records are merged.
//   A probe loop stops as soon as every item has finished (no probe is
//   queued after that) and writes only probes that started.
// - Microsecond durations become milliseconds rounded to nearest, at least 1
//   when the duration is positive (spin: always at least 1). Arrivals and
//   group starts are waited for with Thread.Sleep (ms resolution: a
//   submission may be up to ~1 ms late; no spinning on the measured cores).
// - Busy steps: a Stopwatch loop on the exact microsecond duration.
// - CPU steps: a calibrated loop; calibration (on the main thread, before
//   t0, no pool threads) times its trials with the thread's CPU clock.
// - The timeout counts from t0. On timeout only finished items are written.
// - One-call shapes: every item's queued_us is the time of the call.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace PoolsimHarness
{
    enum Submit { TaskRun, QueueUserWorkItem, WhenAll, NewThread, ParallelInvoke, ParallelFor, ParallelForEach, Plinq, ParallelForEachAsync }
    enum ThrottleKind { None, ConcurrentExclusive, Semaphore }
    enum StepKind { Cpu, Spin, Busy, Sleep, Wait, Await, Yield }

    sealed class Step
    {
        public StepKind Kind;
        public long Us;
        public int Ms;          // spin/sleep/wait/await
        public long Iterations; // cpu (set after calibration)
    }

    sealed class Group
    {
        public int Index;
        public int Count;
        public Submit Submit;
        public bool FromPool;
        public bool FromTimer;  // from=timer: a periodic Timer's callbacks queue the items
        public int PerTick;     // items each firing queues (from=timer)
        public long PeriodUs;   // the timer's period (from=timer), whole milliseconds
        public int MaxDegree;
        public ThrottleKind Throttle;
        public int Limit;
        public long StartUs;
        public int After = -1;
        public long DelayUs;
        public long[] Arrivals;
        public Step[] Steps;
        public int Line;
        public bool IsAsync;
        public bool OneCall;

        // run-time state
        public int BaseIdx;
        public int Remaining;
        public long FinishUs = -1;
        public ManualResetEvent Done = new ManualResetEvent(false);
        public long CallQueuedUs = -1;
        public ConcurrentExclusiveSchedulerPair Pair;
        public SemaphoreSlim Sem;
        public Action[] InvokeActions;
    }

    sealed class PlanError : Exception
    {
        public readonly bool Unsupported;
        public PlanError(bool unsupported, string msg) : base(msg) { Unsupported = unsupported; }
    }

    sealed class Plan
    {
        public string Scenario = "";
        public int MinThreads = -1, MaxThreads = -1;
        public long TimeoutMs = -1, SampleUs = -1;
        public List<long> ProbeEveryUs = new List<long>();
        public List<Group> Groups = new List<Group>();
    }

    static class Harness
    {
        // ---------------------------------------------------------------- time

        static long t0Ticks;
        static readonly long Freq = Stopwatch.Frequency;

        static long Now()
        {
            long d = Stopwatch.GetTimestamp() - t0Ticks;
            return d / Freq * 1000000L + d % Freq * 1000000L / Freq;
        }

        static int UsToMs(long us)
        {
            if (us <= 0) return 0;
            long ms = (us + 500) / 1000;
            if (ms < 1) ms = 1;
            return ms > int.MaxValue ? int.MaxValue : (int)ms;
        }

        static void SleepUntil(long targetUs)
        {
            while (true)
            {
                long rem = targetUs - Now();
                if (rem <= 0) return;
                long ms = (rem + 999) / 1000;
                Thread.Sleep(ms > int.MaxValue ? int.MaxValue : (int)ms);
            }
        }

        // ------------------------------------------------------------- records

        static Plan plan;
        static Group[] groups;
        static int totalItems;
        static int[] itemThread;
        static long[] itemQueued, itemStarted, itemFinished;
        static int remainingItems;
        static long endUs = -1;
        static readonly ManualResetEvent allDone = new ManualResetEvent(false);
        static readonly ManualResetEvent go = new ManualResetEvent(false);
        static readonly ManualResetEvent stopSampler = new ManualResetEvent(false);
        static volatile string fatal;

        // One probe loop per `probe` line: the first on the main thread, any
        // further ones on dedicated threads `probe K`.
        sealed class ProbeLoop
        {
            public long EveryUs;
            public long[] Queued, Started;
            public volatile int Count;
        }
        static ProbeLoop[] probeLoops;

        static long[] sampleT;
        static int[] sampleN;
        // ThreadPool.CompletedWorkItemCount at each sample (-1 where missing).
        static long[] sampleDone;
        static volatile int sampleCount;

        static Func<int> poolThreadCount;
        // ThreadPool.CompletedWorkItemCount (.NET Core 3.0+): every work item
        // the pool completed, the runtime's own (timer callbacks, tiered
        // compilation's background work) included.
        static Func<long> poolCompleted;
        static long timeoutUs;
        static int baselineTasks;

        static void Begin(Group g, int i)
        {
            int k = g.BaseIdx + i;
            itemThread[k] = Thread.CurrentThread.ManagedThreadId;
            itemStarted[k] = Now();
        }

        static void Finish(Group g, int i)
        {
            int k = g.BaseIdx + i;
            Volatile.Write(ref itemFinished[k], Now());
            if (Interlocked.Decrement(ref g.Remaining) == 0)
            {
                Volatile.Write(ref g.FinishUs, Now());
                g.Done.Set();
            }
            if (Interlocked.Decrement(ref remainingItems) == 0)
            {
                Volatile.Write(ref endUs, Now());
                allDone.Set();
            }
        }

        static void Queued(Group g, int i)
        {
            itemQueued[g.BaseIdx + i] = Now();
        }

        // --------------------------------------------------------------- steps

        public static long Sink; // read by nobody, written by every CPU step
        static long ipm; // calibrated iterations per millisecond
        static readonly Func<bool> never = () => false;

        // A latency-bound xorshift chain: every iteration depends on the last,
        // so tier-0, OSR and fully optimized code all run it at the same
        // speed (checked on all three runtimes), and the calibration holds
        // whatever tiered compilation does later.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static ulong Burn(long n, ulong x)
        {
            for (long i = 0; i < n; i++)
            {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
            }
            return x;
        }

        static void Cpu(long iterations)
        {
            ulong r = Burn(iterations, (ulong)Stopwatch.GetTimestamp() | 1UL);
            Sink = (long)r; // observable: the loop cannot be removed
        }

        // A Stopwatch busy loop (`busy_ms`), as demos write it:
        // `while (sw.ElapsedMilliseconds < ms) {}`; holds its core throughout.
        static void Busy(long us)
        {
            long ticks = us * Freq / 1000000;
            Stopwatch sw = Stopwatch.StartNew();
            while (sw.ElapsedTicks < ticks) { }
        }

        static void SyncStep(Step s)
        {
            switch (s.Kind)
            {
                case StepKind.Cpu: Cpu(s.Iterations); break;
                case StepKind.Spin: SpinWait.SpinUntil(never, s.Ms); break;
                case StepKind.Busy: Busy(s.Us); break;
                case StepKind.Sleep: Thread.Sleep(s.Ms); break;
                case StepKind.Wait: Task.Delay(s.Ms).Wait(); break;
                default: throw new InvalidOperationException("async step in a synchronous body");
            }
        }

        static void RunSync(Group g, int i)
        {
            Begin(g, i);
            Step[] steps = g.Steps;
            for (int j = 0; j < steps.Length; j++) SyncStep(steps[j]);
            Finish(g, i);
        }

        static async Task RunAsync(Group g, int i)
        {
            Begin(g, i);
            Step[] steps = g.Steps;
            for (int j = 0; j < steps.Length; j++)
            {
                Step s = steps[j];
                if (s.Kind == StepKind.Await) await Task.Delay(s.Ms);
                else if (s.Kind == StepKind.Yield) await Task.Yield();
                else SyncStep(s);
            }
            Finish(g, i);
        }

        // -------------------------------------------------------------- submit

        // An async body started where nothing awaits it (async void style):
        // its own Begin/Finish record it.
        static void Forget(Task t) { }

        // Submits item i of a per-item shape; returns its task (when-all) or null.
        static Task SubmitOne(Group g, int i)
        {
            Queued(g, i);
            if (g.Throttle == ThrottleKind.ConcurrentExclusive)
            {
                if (g.IsAsync)
                    return Task.Factory.StartNew(() => RunAsync(g, i), CancellationToken.None,
                        TaskCreationOptions.None, g.Pair.ConcurrentScheduler).Unwrap();
                return Task.Factory.StartNew(() => RunSync(g, i), CancellationToken.None,
                    TaskCreationOptions.None, g.Pair.ConcurrentScheduler);
            }
            if (g.Throttle == ThrottleKind.Semaphore)
            {
                SemaphoreSlim sem = g.Sem;
                if (g.IsAsync)
                    return Task.Run(async () =>
                    {
                        await sem.WaitAsync();
                        try { await RunAsync(g, i); } finally { sem.Release(); }
                    });
                return Task.Run(async () =>
                {
                    await sem.WaitAsync();
                    try { RunSync(g, i); } finally { sem.Release(); }
                });
            }
            switch (g.Submit)
            {
                case Submit.TaskRun:
                case Submit.WhenAll:
                    if (g.IsAsync) return Task.Run(() => RunAsync(g, i));
                    return Task.Run(() => RunSync(g, i));
                case Submit.QueueUserWorkItem:
                    if (g.IsAsync) ThreadPool.QueueUserWorkItem(_ => { Forget(RunAsync(g, i)); });
                    else ThreadPool.QueueUserWorkItem(_ => RunSync(g, i));
                    return null;
                case Submit.NewThread:
                    {
                        Thread t;
                        if (g.IsAsync) t = new Thread(() => { Forget(RunAsync(g, i)); });
                        else t = new Thread(() => RunSync(g, i));
                        t.IsBackground = true;
                        t.Start();
                        return null;
                    }
                default:
                    throw new InvalidOperationException("not a per-item shape");
            }
        }

        static void OneCall(Group g)
        {
            Volatile.Write(ref g.CallQueuedUs, Now());
            int n = g.Count;
            ParallelOptions opts = new ParallelOptions();
            if (g.MaxDegree > 0) opts.MaxDegreeOfParallelism = g.MaxDegree;
            switch (g.Submit)
            {
                case Submit.ParallelInvoke:
                    Parallel.Invoke(opts, g.InvokeActions);
                    break;
                case Submit.ParallelFor:
                    Parallel.For(0, n, opts, i => RunSync(g, i));
                    break;
                case Submit.ParallelForEach:
                    Parallel.ForEach(Enumerable.Range(0, n), opts, i => RunSync(g, i));
                    break;
                case Submit.Plinq:
                    {
                        ParallelQuery<int> q = Enumerable.Range(0, n).AsParallel();
                        if (g.MaxDegree > 0) q = q.WithDegreeOfParallelism(g.MaxDegree);
                        q.Select(i => { RunSync(g, i); return i; }).ToArray();
                        break;
                    }
                default:
                    throw new InvalidOperationException("not a one-call shape");
            }
        }

        // Submits the whole group from the current thread, starting at startUs.
        static void SubmitGroup(Group g, long startUs)
        {
            if (g.OneCall)
            {
                SleepUntil(startUs + g.Arrivals[0]);
                OneCall(g);
                return;
            }
            Task[] tasks = g.Submit == Submit.WhenAll ? new Task[g.Count] : null;
            for (int i = 0; i < g.Count; i++)
            {
                SleepUntil(startUs + g.Arrivals[i]);
                Task t = SubmitOne(g, i);
                if (tasks != null) tasks[i] = t;
            }
            if (tasks != null && tasks.Length > 0) Task.WhenAll(tasks).Wait();
        }

        static void SubmitterThread(object o)
        {
            Group g = (Group)o;
            try
            {
                go.WaitOne();
                long start;
                if (g.After >= 0)
                {
                    Group h = groups[g.After];
                    h.Done.WaitOne();
                    start = Volatile.Read(ref h.FinishUs) + g.DelayUs;
                }
                else start = g.StartUs;
                if (g.FromTimer)
                {
                    SleepUntil(start);
                    StartTimer(g);
                }
                else if (g.FromPool)
                {
                    SleepUntil(start);
                    Task.Run(() =>
                    {
                        try { SubmitGroup(g, start); EmptyDone(g); }
                        catch (Exception e) { Fail(e); }
                    });
                }
                else { SubmitGroup(g, start); EmptyDone(g); }
            }
            catch (Exception e) { Fail(e); }
            // Stay alive: a dedicated thread's exit would change the os-tasks count.
            stopSampler.WaitOne();
            Thread.Sleep(Timeout.Infinite);
        }

        // from=timer: new Timer(callback, null, 0, period) on this thread. Each
        // firing's callback runs as pool work and queues the next PerTick
        // items; the timer is disposed once the last are queued.
        static readonly List<Timer> liveTimers = new List<Timer>();
        sealed class TimerHolder { public Timer Timer; public int Fired; }

        static void StartTimer(Group g)
        {
            int firings = (g.Count + g.PerTick - 1) / g.PerTick;
            var h = new TimerHolder();
            TimerCallback cb = _ =>
            {
                int k = Interlocked.Increment(ref h.Fired) - 1;
                if (k >= firings) return;
                try
                {
                    int end = Math.Min(g.Count, (k + 1) * g.PerTick);
                    for (int i = k * g.PerTick; i < end; i++) SubmitOne(g, i);
                    if (k == firings - 1)
                    {
                        Timer t;
                        lock (h) t = h.Timer;
                        if (t != null) t.Dispose();
                    }
                }
                catch (Exception e) { Fail(e); }
            };
            Timer timer = new Timer(cb, null, 0, (int)(g.PeriodUs / 1000));
            lock (h) h.Timer = timer;
            lock (liveTimers) liveTimers.Add(timer);
            // The last firing came before the timer was stored: stop it here.
            if (Volatile.Read(ref h.Fired) >= firings) timer.Dispose();
        }

        // A group of no items is finished once it has been submitted.
        static void EmptyDone(Group g)
        {
            if (g.Count != 0) return;
            Volatile.Write(ref g.FinishUs, Now());
            g.Done.Set();
        }

        static void Fail(Exception e)
        {
            Exception x = e;
            AggregateException ae = e as AggregateException;
            if (ae != null && ae.InnerExceptions.Count > 0) x = ae.Flatten().InnerExceptions[0];
            fatal = x.GetType().Name + ": " + x.Message;
            allDone.Set();
        }

        // ------------------------------------------------------------- sampler

        static int CountTasks()
        {
            try { return Directory.GetFileSystemEntries("/proc/self/task").Length; }
            catch { return -1; }
        }

        static int SampleThreads()
        {
            int n;
            if (poolThreadCount != null) n = poolThreadCount();
            else
            {
                n = CountTasks();
                n = n < 0 ? 0 : n - baselineTasks;
            }
            return n < 0 ? 0 : n; // the trace holds whole numbers
        }

        static void SamplerThread()
        {
            go.WaitOne();
            long period = plan.SampleUs;
            long next = 0;
            while (true)
            {
                int c = sampleCount;
                if (c >= sampleT.Length) return;
                long t = Now();
                int n = SampleThreads();
                sampleT[c] = t;
                sampleN[c] = n;
                sampleDone[c] = poolCompleted != null ? poolCompleted() : -1;
                sampleCount = c + 1;
                next += period;
                long now = Now();
                if (next < now) next = now; // fell behind: no catch-up burst
                long rem = next - now;
                int ms = (int)Math.Min(int.MaxValue, (rem + 999) / 1000);
                if (stopSampler.WaitOne(ms)) return;
            }
        }

        // -------------------------------------------------------------- probes

        // `Thread.Sleep(P); queued = now; Task.Run(() => started = now).Wait();`
        // while items remain. The sleep is a wait on allDone: the same block
        // for the pool, but the loop ends as soon as the work is done (as in
        // the simulator, no probe is queued once every item has finished).
        static void RunProbeLoop(ProbeLoop pl)
        {
            int sleepMs = UsToMs(pl.EveryUs);
            while (true)
            {
                long rem = timeoutUs - Now();
                if (rem <= 0) return;
                if (allDone.WaitOne((int)Math.Min(sleepMs, (rem + 999) / 1000))) return;
                if (Now() >= timeoutUs) return;
                int c = pl.Count;
                bool keep = c < pl.Queued.Length;
                long[] started = pl.Started;
                long q = Now();
                Task pt = keep ? Task.Run(() => { started[c] = Now(); }) : Task.Run(() => { });
                long left = timeoutUs - Now();
                if (left <= 0 || !pt.Wait((int)Math.Min(int.MaxValue, (left + 999) / 1000))) return;
                if (keep)
                {
                    pl.Queued[c] = q;
                    pl.Count = c + 1;
                }
            }
        }

        static void ProbeThread(object o)
        {
            go.WaitOne();
            RunProbeLoop((ProbeLoop)o);
            stopSampler.WaitOne();
            Thread.Sleep(Timeout.Infinite);
        }

        // --------------------------------------------------------------- parse

        static PlanError Bad(int line, string msg) { return new PlanError(false, "bad plan line " + line + ": " + msg); }

        static long ParseLong(string s, int line, string what, long min)
        {
            long v;
            if (!long.TryParse(s, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out v))
                throw Bad(line, what + " is not an integer: `" + s + "`");
            if (v < min) throw Bad(line, what + " must be at least " + min + ", found " + v);
            return v;
        }

        static int ParseInt(string s, int line, string what, long min)
        {
            long v = ParseLong(s, line, what, min);
            if (v > int.MaxValue) throw Bad(line, what + " is too large: " + v);
            return (int)v;
        }

        static Submit ParseSubmit(string s, int line)
        {
            switch (s)
            {
                case "task-run": return Submit.TaskRun;
                case "queue-user-work-item": return Submit.QueueUserWorkItem;
                case "when-all": return Submit.WhenAll;
                case "new-thread": return Submit.NewThread;
                case "parallel-invoke": return Submit.ParallelInvoke;
                case "parallel-for": return Submit.ParallelFor;
                case "parallel-foreach": return Submit.ParallelForEach;
                case "plinq": return Submit.Plinq;
                case "parallel-foreach-async": return Submit.ParallelForEachAsync;
            }
            throw Bad(line, "unknown submit `" + s + "`");
        }

        static bool IsOneCall(Submit s)
        {
            return s == Submit.ParallelInvoke || s == Submit.ParallelFor || s == Submit.ParallelForEach
                || s == Submit.Plinq || s == Submit.ParallelForEachAsync;
        }

        static readonly string[] GroupKeys = { "count", "submit", "from", "max_degree", "throttle", "limit", "start_us", "after", "delay_us" };
        // Keys only a from=timer group has.
        static readonly string[] TimerKeys = { "per_tick", "period_us" };

        static Plan Parse(string[] lines)
        {
            Plan p = new Plan();
            bool header = false, ended = false, sawScenario = false;
            var arrivalsLine = new Dictionary<int, int>();
            var stepLists = new Dictionary<int, List<Step>>();
            int n = 0;
            foreach (string raw in lines)
            {
                n++;
                string[] all = raw.Split(new[] { ' ', '\t', '\r', '\f', '\v' }, StringSplitOptions.RemoveEmptyEntries);
                int len = 0;
                while (len < all.Length && !all[len].StartsWith("#", StringComparison.Ordinal)) len++;
                if (len == 0) continue;
                string[] t = new string[len];
                Array.Copy(all, t, len);
                if (ended) throw Bad(n, "text after `end`");
                if (!header)
                {
                    if (t[0] != "poolsim-plan") throw Bad(n, "expected `poolsim-plan 1` first");
                    if (t.Length != 2) throw Bad(n, "expected `poolsim-plan 1`");
                    if (t[1] != "1") throw Bad(n, "unknown plan version `" + t[1] + "` (this harness reads version 1)");
                    header = true;
                    continue;
                }
                switch (t[0])
                {
                    case "scenario":
                        if (sawScenario) throw Bad(n, "second `scenario` line");
                        sawScenario = true;
                        p.Scenario = string.Join(" ", t, 1, t.Length - 1);
                        break;
                    case "min_threads":
                        if (t.Length != 2) throw Bad(n, "expected `min_threads N`");
                        if (p.MinThreads >= 0) throw Bad(n, "second `min_threads` line");
                        p.MinThreads = ParseInt(t[1], n, "min_threads", 1);
                        break;
                    case "max_threads":
                        if (t.Length != 2) throw Bad(n, "expected `max_threads N`");
                        if (p.MaxThreads >= 0) throw Bad(n, "second `max_threads` line");
                        p.MaxThreads = ParseInt(t[1], n, "max_threads", 1);
                        break;
                    case "timeout_ms":
                        if (t.Length != 2) throw Bad(n, "expected `timeout_ms N`");
                        if (p.TimeoutMs >= 0) throw Bad(n, "second `timeout_ms` line");
                        p.TimeoutMs = ParseLong(t[1], n, "timeout_ms", 1);
                        if (p.TimeoutMs > 100L * 24 * 3600 * 1000) throw Bad(n, "timeout_ms is too large");
                        break;
                    case "sample_us":
                        if (t.Length != 2) throw Bad(n, "expected `sample_us N`");
                        if (p.SampleUs >= 0) throw Bad(n, "second `sample_us` line");
                        p.SampleUs = ParseLong(t[1], n, "sample_us", 1);
                        break;
                    case "probe":
                        {
                            if (t.Length != 2 || !t[1].StartsWith("every_us=", StringComparison.Ordinal))
                                throw Bad(n, "expected `probe every_us=P`");
                            p.ProbeEveryUs.Add(ParseLong(t[1].Substring("every_us=".Length), n, "every_us", 1));
                            break;
                        }
                    case "group":
                        p.Groups.Add(ParseGroup(t, n, p.Groups.Count));
                        break;
                    case "arrivals":
                        {
                            if (t.Length < 2) throw Bad(n, "expected `arrivals G o1 o2 ...`");
                            int g = ParseInt(t[1], n, "group index", 0);
                            if (g >= p.Groups.Count) throw Bad(n, "arrivals for group " + g + " before its `group` line");
                            if (arrivalsLine.ContainsKey(g)) throw Bad(n, "second `arrivals` line for group " + g + " (first on line " + arrivalsLine[g] + ")");
                            arrivalsLine[g] = n;
                            Group grp = p.Groups[g];
                            int want = grp.OneCall ? 1 : grp.Count;
                            if (t.Length - 2 != want)
                                throw Bad(n, "group " + g + " needs " + want + " arrival offset" + (want == 1 ? "" : "s") + (grp.OneCall ? " (one call)" : "") + ", found " + (t.Length - 2));
                            long[] a = new long[want];
                            for (int i = 0; i < want; i++) a[i] = ParseLong(t[i + 2], n, "arrival offset " + i, 0);
                            grp.Arrivals = a;
                            break;
                        }
                    case "step":
                        {
                            if (t.Length < 3) throw Bad(n, "expected `step G KIND [US]`");
                            int g = ParseInt(t[1], n, "group index", 0);
                            if (g >= p.Groups.Count) throw Bad(n, "step for group " + g + " before its `group` line");
                            Step s = new Step();
                            switch (t[2])
                            {
                                case "cpu": s.Kind = StepKind.Cpu; break;
                                case "spin": s.Kind = StepKind.Spin; break;
                                case "busy": s.Kind = StepKind.Busy; break;
                                case "sleep": s.Kind = StepKind.Sleep; break;
                                case "wait": s.Kind = StepKind.Wait; break;
                                case "await": s.Kind = StepKind.Await; break;
                                case "yield": s.Kind = StepKind.Yield; break;
                                default: throw Bad(n, "unknown step kind `" + t[2] + "`");
                            }
                            if (s.Kind == StepKind.Yield)
                            {
                                if (t.Length != 3) throw Bad(n, "`yield` takes no duration");
                            }
                            else
                            {
                                if (t.Length != 4) throw Bad(n, "expected `step G " + t[2] + " US`");
                                s.Us = ParseLong(t[3], n, t[2] + " duration", 0);
                                if (s.Us > 10L * 24 * 3600 * 1000000) throw Bad(n, "duration is too large");
                                s.Ms = UsToMs(s.Us);
                                if (s.Kind == StepKind.Spin && s.Ms < 1) s.Ms = 1;
                            }
                            Group grp = p.Groups[g];
                            if ((s.Kind == StepKind.Await || s.Kind == StepKind.Yield) && grp.OneCall && grp.Submit != Submit.ParallelForEachAsync)
                                throw Bad(n, "a `" + t[2] + "` step in group " + g + ": " + SubmitName(grp.Submit) + " bodies are synchronous");
                            if (s.Kind == StepKind.Await || s.Kind == StepKind.Yield) grp.IsAsync = true;
                            List<Step> list;
                            if (!stepLists.TryGetValue(g, out list)) stepLists[g] = list = new List<Step>();
                            list.Add(s);
                            break;
                        }
                    case "end":
                        if (t.Length != 1) throw Bad(n, "`end` takes nothing");
                        ended = true;
                        break;
                    default:
                        throw Bad(n, "unknown line `" + t[0] + "`");
                }
            }
            if (!header) throw Bad(n + 1, "empty plan (expected `poolsim-plan 1`)");
            if (!ended) throw Bad(n + 1, "missing `end`");
            if (p.TimeoutMs < 0) throw Bad(n, "missing `timeout_ms`");
            if (p.SampleUs < 0) throw Bad(n, "missing `sample_us`");
            foreach (Group g in p.Groups)
            {
                if (g.Arrivals == null) throw Bad(g.Line, "group " + g.Index + " has no `arrivals` line");
                List<Step> list;
                g.Steps = stepLists.TryGetValue(g.Index, out list) ? list.ToArray() : new Step[0];
            }
            return p;
        }

        static Group ParseGroup(string[] t, int n, int expect)
        {
            if (t.Length < 2) throw Bad(n, "expected `group G key=value ...`");
            int gi = ParseInt(t[1], n, "group index", 0);
            if (gi != expect) throw Bad(n, "group " + gi + " out of order (expected group " + expect + ")");
            var kv = new Dictionary<string, string>();
            for (int i = 2; i < t.Length; i++)
            {
                int eq = t[i].IndexOf('=');
                if (eq <= 0) throw Bad(n, "expected key=value, found `" + t[i] + "`");
                string k = t[i].Substring(0, eq);
                if (Array.IndexOf(GroupKeys, k) < 0 && Array.IndexOf(TimerKeys, k) < 0) throw Bad(n, "unknown group key `" + k + "`");
                if (kv.ContainsKey(k)) throw Bad(n, "key `" + k + "` given twice");
                kv[k] = t[i].Substring(eq + 1);
            }
            foreach (string k in GroupKeys)
                if (!kv.ContainsKey(k)) throw Bad(n, "group " + gi + " lacks key `" + k + "`");
            Group g = new Group();
            g.Index = gi;
            g.Line = n;
            g.Count = ParseInt(kv["count"], n, "count", 0);
            g.Submit = ParseSubmit(kv["submit"], n);
            g.OneCall = IsOneCall(g.Submit);
            switch (kv["from"])
            {
                case "main": g.FromPool = false; break;
                case "pool": g.FromPool = true; break;
                case "timer": g.FromTimer = true; break;
                default: throw Bad(n, "unknown from `" + kv["from"] + "` (main, pool or timer)");
            }
            foreach (string k in TimerKeys)
                if (kv.ContainsKey(k) != g.FromTimer)
                    throw Bad(n, g.FromTimer ? "group " + gi + " (from=timer) lacks key `" + k + "`" : "key `" + k + "` goes with from=timer");
            if (g.FromTimer)
            {
                g.PerTick = ParseInt(kv["per_tick"], n, "per_tick", 1);
                g.PeriodUs = ParseLong(kv["period_us"], n, "period_us", 1000);
                if (g.PeriodUs % 1000 != 0) throw Bad(n, "period_us=" + g.PeriodUs + " is not whole milliseconds (a Timer's period is an int of ms)");
            }
            g.MaxDegree = ParseInt(kv["max_degree"], n, "max_degree", 0);
            if (g.MaxDegree > 0 && !g.OneCall)
                throw Bad(n, "max_degree=" + g.MaxDegree + " on `" + kv["submit"] + "` (it goes with parallel-* and plinq)");
            switch (kv["throttle"])
            {
                case "none": g.Throttle = ThrottleKind.None; break;
                case "concurrent-exclusive": g.Throttle = ThrottleKind.ConcurrentExclusive; break;
                case "semaphore": g.Throttle = ThrottleKind.Semaphore; break;
                default: throw Bad(n, "unknown throttle `" + kv["throttle"] + "`");
            }
            g.Limit = ParseInt(kv["limit"], n, "limit", 0);
            if (g.Throttle == ThrottleKind.None && g.Limit != 0) throw Bad(n, "limit=" + g.Limit + " without a throttle");
            if (g.Throttle != ThrottleKind.None && g.Limit < 1) throw Bad(n, "a throttle needs limit >= 1");
            g.StartUs = ParseLong(kv["start_us"], n, "start_us", 0);
            g.After = ParseInt(kv["after"], n, "after", -1);
            if (g.After >= gi) throw Bad(n, "after=" + g.After + " must name an earlier group");
            g.DelayUs = ParseLong(kv["delay_us"], n, "delay_us", 0);
            return g;
        }

        static void CheckSupported(Plan p)
        {
            foreach (Group g in p.Groups)
            {
                if (g.Submit == Submit.ParallelForEachAsync)
                    throw new PlanError(true, "unsupported: group " + g.Index + " submit=parallel-foreach-async (Parallel.ForEachAsync is not in the .NET Framework 4.x API)");
                if (g.Throttle != ThrottleKind.None && !(g.Submit == Submit.TaskRun || g.Submit == Submit.QueueUserWorkItem || g.Submit == Submit.WhenAll))
                    throw new PlanError(true, "unsupported: group " + g.Index + " has a throttle on submit=" + SubmitName(g.Submit) + " (throttles go on task-run, queue-user-work-item, when-all)");
                if (g.Submit == Submit.Plinq && g.MaxDegree > 512)
                    throw new PlanError(true, "unsupported: group " + g.Index + " plinq max_degree=" + g.MaxDegree + " (WithDegreeOfParallelism takes at most 512)");
            }
        }

        static string SubmitName(Submit s)
        {
            switch (s)
            {
                case Submit.TaskRun: return "task-run";
                case Submit.QueueUserWorkItem: return "queue-user-work-item";
                case Submit.WhenAll: return "when-all";
                case Submit.NewThread: return "new-thread";
                case Submit.ParallelInvoke: return "parallel-invoke";
                case Submit.ParallelFor: return "parallel-for";
                case Submit.ParallelForEach: return "parallel-foreach";
                case Submit.Plinq: return "plinq";
                default: return "parallel-foreach-async";
            }
        }

        // --------------------------------------------------------------- setup

        static void ApplyPoolLimits(Plan p)
        {
            if (p.MinThreads < 0 && p.MaxThreads < 0) return;
            int minW, minIo, maxW, maxIo;
            ThreadPool.GetMinThreads(out minW, out minIo);
            ThreadPool.GetMaxThreads(out maxW, out maxIo);
            Func<bool> setMin = () => p.MinThreads < 0 || ThreadPool.SetMinThreads(p.MinThreads, Math.Max(p.MinThreads, minIo));
            Func<bool> setMax = () => p.MaxThreads < 0 || ThreadPool.SetMaxThreads(p.MaxThreads, maxIo);
            // Order matters when a new minimum exceeds the current maximum or a
            // new maximum is below the current minimum: try both orders.
            bool ok = setMax() && setMin();
            if (!ok) ok = setMin() && setMax();
            if (!ok)
                throw new PlanError(true, "unsupported: ThreadPool refused"
                    + (p.MinThreads >= 0 ? " SetMinThreads(" + p.MinThreads + ", " + Math.Max(p.MinThreads, minIo) + ")" : "")
                    + (p.MaxThreads >= 0 ? " SetMaxThreads(" + p.MaxThreads + ", " + maxIo + ")" : "")
                    + " (current min " + minW + "/" + minIo + ", max " + maxW + "/" + maxIo
                    + ", Environment.ProcessorCount " + Environment.ProcessorCount + ")");
        }

        static string RuntimeName()
        {
            try
            {
                Type mono = Type.GetType("Mono.Runtime");
                if (mono != null)
                {
                    MethodInfo m = mono.GetMethod("GetDisplayName", BindingFlags.NonPublic | BindingFlags.Public | BindingFlags.Static);
                    if (m != null) return "Mono " + (string)m.Invoke(null, null);
                }
                Type ri = Type.GetType("System.Runtime.InteropServices.RuntimeInformation, System.Runtime.InteropServices.RuntimeInformation");
                if (ri != null)
                {
                    PropertyInfo fd = ri.GetProperty("FrameworkDescription", BindingFlags.Public | BindingFlags.Static);
                    if (fd != null) return ((string)fd.GetValue(null, null)).Trim();
                }
            }
            catch { }
            return "CLR " + Environment.Version.ToString();
        }

        // The getter of ThreadPool's static property `name` of type T, or null
        // where this runtime has none (ThreadCount, CompletedWorkItemCount:
        // .NET Core 3.0+).
        static Func<T> FindPoolGetter<T>(string name)
        {
            try
            {
                PropertyInfo pi = typeof(ThreadPool).GetProperty(name, BindingFlags.Public | BindingFlags.Static);
                if (pi == null || pi.PropertyType != typeof(T)) return null;
                MethodInfo get = pi.GetGetMethod();
                if (get == null) return null;
                return (Func<T>)Delegate.CreateDelegate(typeof(Func<T>), get);
            }
            catch { return null; }
        }

        // JIT the harness's own methods before t0 (not the framework's: their
        // first use is part of what the run measures).
        static void PrepareOwnCode()
        {
            foreach (Type ty in typeof(Harness).Assembly.GetTypes())
            {
                if (ty.IsGenericTypeDefinition) continue;
                foreach (MethodInfo m in ty.GetMethods(BindingFlags.DeclaredOnly | BindingFlags.Instance | BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic))
                {
                    if (m.IsAbstract || m.ContainsGenericParameters) continue;
                    try { RuntimeHelpers.PrepareMethod(m.MethodHandle); } catch { }
                }
            }
        }

        [StructLayout(LayoutKind.Sequential)]
        struct Timespec { public long Sec; public long Nsec; }

        [DllImport("libc.so.6", EntryPoint = "clock_gettime")]
        static extern int clock_gettime(int clock, out Timespec ts);

        const int CLOCK_THREAD_CPUTIME_ID = 3;
        static bool threadCpuClock = true;

        // CPU time of the calling thread in ms, or -1 where the clock is missing.
        static double ThreadCpuMs()
        {
            if (!threadCpuClock) return -1;
            try
            {
                Timespec ts;
                if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, out ts) == 0) return ts.Sec * 1000.0 + ts.Nsec / 1e6;
            }
            catch (Exception) { }
            threadCpuClock = false;
            return -1;
        }

        // Iterations of Burn per ms of one core. Each trial is timed by the
        // main thread's own CPU clock (so another process using the cores
        // during calibration does not skew it), else by the wall clock; the
        // fastest of the trials counts.
        static long Calibrate()
        {
            // JIT warm-up.
            for (int k = 0; k < 5; k++) Cpu(1000);
            ThreadCpuMs();
            Stopwatch sw = new Stopwatch();
            Func<long, double> trial = n =>
            {
                double c0 = ThreadCpuMs();
                sw.Restart();
                Cpu(n);
                sw.Stop();
                double c1 = ThreadCpuMs();
                double wall = sw.Elapsed.TotalMilliseconds;
                if (c0 < 0 || c1 < 0) return wall;
                double cpu = c1 - c0;
                // A CPU clock that disagrees wildly with the wall clock is not trusted.
                return cpu > 0 && cpu <= wall * 1.05 ? cpu : wall;
            };
            // Grow until one run takes >= 8 ms.
            long iters = 20000;
            double ms;
            while (true)
            {
                ms = trial(iters);
                if (ms >= 8 || iters > (1L << 40)) break;
                iters = ms < 0.5 ? iters * 8 : Math.Max(iters * 2, (long)(iters * 10.0 / ms));
            }
            // Trials of ~15 ms; the fastest is the least disturbed.
            iters = Math.Max(1, (long)(iters * 15.0 / Math.Max(ms, 0.001)));
            double best = double.MaxValue;
            Stopwatch total = Stopwatch.StartNew();
            for (int k = 0; k < 9 && (k < 3 || total.ElapsedMilliseconds < 180); k++)
                best = Math.Min(best, trial(iters));
            return Math.Max(1, (long)(iters / best));
        }

        // ---------------------------------------------------------------- main

        static int Main(string[] args)
        {
            if (args.Length != 2)
            {
                Console.Error.WriteLine("harness: usage: harness.exe PLAN OUT");
                return 1;
            }
            string[] lines;
            try { lines = File.ReadAllLines(args[0]); }
            catch (Exception e)
            {
                Console.Error.WriteLine("harness: cannot read plan " + args[0] + ": " + e.Message);
                return 1;
            }
            try
            {
                plan = Parse(lines);
                CheckSupported(plan);
                ApplyPoolLimits(plan);
            }
            catch (PlanError e)
            {
                Console.Error.WriteLine("harness: " + e.Message);
                return 2;
            }
            try
            {
                return Run(args[1]);
            }
            catch (Exception e)
            {
                Console.Error.WriteLine("harness: error: " + e);
                Console.Error.Flush();
                Environment.Exit(1);
                return 1;
            }
        }

        static int Run(string outPath)
        {
            string runtime = RuntimeName();
            poolThreadCount = FindPoolGetter<int>("ThreadCount");
            poolCompleted = FindPoolGetter<long>("CompletedWorkItemCount");
            if (poolCompleted != null) poolCompleted(); // compiled before t0
            groups = plan.Groups.ToArray();

            // Records.
            long total = 0;
            foreach (Group g in groups) { g.BaseIdx = (int)total; total += g.Count; }
            if (total > int.MaxValue) throw new InvalidOperationException("too many items: " + total);
            totalItems = (int)total;
            itemThread = new int[totalItems];
            itemQueued = new long[totalItems];
            itemStarted = new long[totalItems];
            itemFinished = new long[totalItems];
            for (int k = 0; k < totalItems; k++) { itemQueued[k] = -1; itemStarted[k] = -1; itemFinished[k] = -1; }
            remainingItems = totalItems;
            timeoutUs = plan.TimeoutMs * 1000;
            long cap = Math.Min(4000000L, timeoutUs / Math.Max(plan.SampleUs, 1000) + 64);
            sampleT = new long[cap];
            sampleN = new int[cap];
            sampleDone = new long[cap];
            probeLoops = new ProbeLoop[plan.ProbeEveryUs.Count];
            for (int k = 0; k < probeLoops.Length; k++)
            {
                long every = plan.ProbeEveryUs[k];
                long pc = Math.Min(4000000L, timeoutUs / Math.Max(every, 1000) + 64);
                probeLoops[k] = new ProbeLoop { EveryUs = every, Queued = new long[pc], Started = new long[pc] };
            }

            // Per-group objects.
            foreach (Group g in groups)
            {
                g.Remaining = g.Count;
                if (g.Throttle == ThrottleKind.ConcurrentExclusive)
                    g.Pair = new ConcurrentExclusiveSchedulerPair(TaskScheduler.Default, g.Limit);
                else if (g.Throttle == ThrottleKind.Semaphore)
                    g.Sem = new SemaphoreSlim(g.Limit);
                if (g.Submit == Submit.ParallelInvoke)
                {
                    Group gg = g;
                    g.InvokeActions = new Action[g.Count];
                    for (int i = 0; i < g.Count; i++)
                    {
                        int k = i;
                        g.InvokeActions[i] = () => RunSync(gg, k);
                    }
                }
            }

            PrepareOwnCode();
            ipm = Calibrate();
            foreach (Group g in groups)
                foreach (Step s in g.Steps)
                    if (s.Kind == StepKind.Cpu)
                        s.Iterations = (long)Math.Round(s.Us * (double)ipm / 1000.0);

            // Dedicated threads, all created before t0.
            Thread sampler = new Thread(SamplerThread);
            sampler.Name = "sampler";
            sampler.IsBackground = true;
            sampler.Start();
            for (int k = 1; k < probeLoops.Length; k++)
            {
                Thread pt = new Thread(ProbeThread);
                pt.Name = "probe " + k.ToString(CultureInfo.InvariantCulture);
                pt.IsBackground = true;
                pt.Start(probeLoops[k]);
            }
            foreach (Group g in groups)
            {
                Thread s = new Thread(SubmitterThread);
                s.Name = "submitter " + g.Index.ToString(CultureInfo.InvariantCulture);
                s.IsBackground = true;
                s.Start(g);
            }
            Thread.Sleep(20); // let them reach go.WaitOne()
            bool osTasks = poolThreadCount == null;
            if (osTasks) baselineTasks = CountTasks();

            t0Ticks = Stopwatch.GetTimestamp();
            if (totalItems == 0) { endUs = 0; allDone.Set(); }
            go.Set();

            if (probeLoops.Length > 0) RunProbeLoop(probeLoops[0]);
            long left = timeoutUs - Now();
            bool timedOut = !allDone.WaitOne(left <= 0 ? 0 : (int)Math.Min(int.MaxValue, (left + 999) / 1000));
            if (fatal != null)
            {
                Console.Error.WriteLine("harness: error: " + fatal);
                Console.Error.Flush();
                Environment.Exit(1);
            }
            if (!timedOut && Volatile.Read(ref remainingItems) != 0) timedOut = true;

            stopSampler.Set();
            sampler.Join(2000);

            Write(outPath, runtime, osTasks, timedOut);
            Environment.Exit(timedOut ? 3 : 0);
            return timedOut ? 3 : 0;
        }

        static void Write(string path, string runtime, bool osTasks, bool timedOut)
        {
            CultureInfo ic = CultureInfo.InvariantCulture;
            StringBuilder sb = new StringBuilder(256 + totalItems * 40);
            sb.Append("poolsim-measured 1\n");
            sb.Append("runtime ").Append(runtime.Replace('\n', ' ').Replace('\r', ' ')).Append('\n');
            sb.Append("processors ").Append(Environment.ProcessorCount.ToString(ic)).Append('\n');
            sb.Append("threads_source ").Append(osTasks ? "os-tasks" : "pool-counter").Append('\n');
            sb.Append("calibration_iterations_per_ms ").Append(ipm.ToString(ic)).Append('\n');
            // t0 on the Stopwatch clock, which is the QPC clock an EventPipe
            // trace stamps its events with: it puts the runtime's own events
            // on the run's time axis.
            sb.Append("clock ").Append(t0Ticks.ToString(ic)).Append(' ').Append(Freq.ToString(ic)).Append('\n');
            foreach (Group g in groups)
            {
                long callQ = Volatile.Read(ref g.CallQueuedUs);
                for (int i = 0; i < g.Count; i++)
                {
                    int k = g.BaseIdx + i;
                    long f = Volatile.Read(ref itemFinished[k]);
                    if (f < 0) continue; // unfinished (timeout)
                    long q = g.OneCall ? callQ : itemQueued[k];
                    sb.Append("item ").Append(g.Index.ToString(ic)).Append(' ').Append(i.ToString(ic)).Append(' ')
                      .Append(itemThread[k].ToString(ic)).Append(' ').Append(q.ToString(ic)).Append(' ')
                      .Append(itemStarted[k].ToString(ic)).Append(' ').Append(f.ToString(ic)).Append('\n');
                }
            }
            foreach (ProbeLoop pl in probeLoops)
            {
                int pc = pl.Count;
                for (int c = 0; c < pc; c++)
                    sb.Append("probe ").Append(pl.Queued[c].ToString(ic)).Append(' ').Append(pl.Started[c].ToString(ic)).Append('\n');
            }
            int sc = sampleCount;
            for (int c = 0; c < sc; c++)
            {
                sb.Append("threads ").Append(sampleT[c].ToString(ic)).Append(' ').Append(sampleN[c].ToString(ic));
                if (sampleDone[c] >= 0) sb.Append(' ').Append(sampleDone[c].ToString(ic));
                sb.Append('\n');
            }
            if (!timedOut)
                sb.Append("end ").Append(Volatile.Read(ref endUs).ToString(ic)).Append('\n');
            File.WriteAllText(path, sb.ToString(), new UTF8Encoding(false));
        }
    }
}
