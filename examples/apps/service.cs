// service.cs: a request loop doing sync over async, the shape of a service
// whose handlers call `.Result` on an async call.
//
// The main thread (not a pool thread) sends COUNT requests with Poisson
// arrivals at RATE a second (System.Random seeded with SEED, so every run
// sends the same arrival instants); each request is `Task.Run` of
//   CPU_MS of CPU work; Task.Delay(WAIT_MS).Wait(); CPU_MS of CPU work
// Prints one `item` line per request (queued, started, finished, in ms
// since the first request was sent), `sample` lines of the pool's thread
// count every 50 ms, and a `summary` line.
// Compiled with Mono's mcs (C# 7, .NET Framework 4.x API) and run on .NET 8
// with `dotnet exec --runtimeconfig` (scripts/app-loop.sh); ThreadPool.ThreadCount
// is reached by reflection since Mono's API lacks it.
// Usage: service.exe [COUNT [RATE [CPU_MS [WAIT_MS [SEED]]]]]
using System;
using System.Diagnostics;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

static class Service
{
    static long ThreadCount()
    {
        PropertyInfo p = typeof(ThreadPool).GetProperty("ThreadCount", BindingFlags.Public | BindingFlags.Static);
        return p == null ? -1 : Convert.ToInt64(p.GetValue(null, null));
    }

    static void Cpu(Stopwatch sw, double ms)
    {
        // CPU work measured by the thread's own clock would be better; a
        // Stopwatch loop is what the harness's `cpu_ms` bodies use too.
        long until = sw.ElapsedTicks + (long)(ms * Stopwatch.Frequency / 1000.0);
        while (sw.ElapsedTicks < until) { }
    }

    static int Main(string[] args)
    {
        int count = args.Length > 0 ? int.Parse(args[0]) : 1000;
        double rate = args.Length > 1 ? double.Parse(args[1]) : 100;
        double cpuMs = args.Length > 2 ? double.Parse(args[2]) : 1;
        int waitMs = args.Length > 3 ? int.Parse(args[3]) : 50;
        int seed = args.Length > 4 ? int.Parse(args[4]) : 1;
        var random = new Random(seed);
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
        double next = 0;
        for (int i = 0; i < count; i++)
        {
            // Exponential gaps: a Poisson process of `rate` a second.
            next += -Math.Log(1.0 - random.NextDouble()) * 1000.0 / rate;
            double wait = next - now();
            if (wait > 1) Thread.Sleep((int)wait);
            while (now() < next) { }
            int k = i;
            queued[k] = now();
            Task.Run(() =>
            {
                started[k] = now();
                Cpu(sw, cpuMs);
                Task.Delay(waitMs).Wait();
                Cpu(sw, cpuMs);
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
