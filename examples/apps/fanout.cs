// fanout.cs: a gateway whose handler fans out to several backends and blocks
// on the answers: each request, `Task.Run` from the main thread at a fixed
// interval, starts FANOUT backend calls with `Task.Run`, each
// `Task.Delay(CALL_MS).Wait()` (a synchronous client over an async one),
// then waits for them all with `Task.WhenAll(calls).Wait()`: sync over async
// twice over, and work queued from pool threads.
// Prints one `item` line per request (queued, started, finished, in ms since
// the first request was sent), `sample` lines of the pool's thread count
// every 50 ms, and a `summary` line, as service.cs does.
// Usage: fanout.exe [COUNT [INTERVAL_MS [FANOUT [CALL_MS]]]]
using System;
using System.Diagnostics;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

static class Fanout
{
    static long ThreadCount()
    {
        PropertyInfo p = typeof(ThreadPool).GetProperty("ThreadCount", BindingFlags.Public | BindingFlags.Static);
        return p == null ? -1 : Convert.ToInt64(p.GetValue(null, null));
    }

    static int Main(string[] args)
    {
        int count = args.Length > 0 ? int.Parse(args[0]) : 200;
        double interval = args.Length > 1 ? double.Parse(args[1]) : 20;
        int fanout = args.Length > 2 ? int.Parse(args[2]) : 4;
        int callMs = args.Length > 3 ? int.Parse(args[3]) : 100;
        var queued = new double[count];
        var started = new double[count];
        var finished = new double[count];
        int done = 0;
        var allDone = new ManualResetEvent(false);
        var sw = Stopwatch.StartNew();
        Func<double> now = () => sw.ElapsedTicks * 1000.0 / Stopwatch.Frequency;
        long peak = 0;
        var sampler = new Thread(() =>
        {
            while (!allDone.WaitOne(50))
            {
                long c = ThreadCount();
                if (c > peak) peak = c;
                Console.WriteLine("sample t_ms={0:F1} threads={1}", now(), c);
            }
        });
        sampler.IsBackground = true;
        sampler.Start();
        for (int i = 0; i < count; i++)
        {
            double next = i * interval;
            double wait = next - now();
            if (wait > 1) Thread.Sleep((int)wait);
            while (now() < next) { }
            int k = i;
            queued[k] = now();
            Task.Run(() =>
            {
                started[k] = now();
                var calls = new Task[fanout];
                for (int j = 0; j < fanout; j++)
                    calls[j] = Task.Run(() => Task.Delay(callMs).Wait());
                Task.WhenAll(calls).Wait();
                finished[k] = now();
                if (Interlocked.Increment(ref done) == count) allDone.Set();
            });
        }
        allDone.WaitOne();
        long last = ThreadCount();
        if (last > peak) peak = last;
        var latency = new double[count];
        double first = queued[0], end = 0;
        for (int i = 0; i < count; i++)
        {
            latency[i] = finished[i] - queued[i];
            if (finished[i] > end) end = finished[i];
            Console.WriteLine("item i={0} queued_ms={1:F3} start_ms={2:F3} end_ms={3:F3}", i, queued[i], started[i], finished[i]);
        }
        Array.Sort(latency);
        Func<double, double> q = p => latency[Math.Min(count - 1, (int)Math.Ceiling(p * count) - 1)];
        Console.WriteLine("summary items={0} peak_thread_count={1} makespan_ms={2:F1} latency_p50_ms={3:F1} latency_p99_ms={4:F1} latency_max_ms={5:F1}",
            count, peak, end - first, q(0.50), q(0.99), latency[count - 1]);
        return 0;
    }
}
