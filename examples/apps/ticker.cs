// ticker.cs: a service with a periodic job: a System.Threading.Timer fires
// every PERIOD_MS, TICKS times, and each tick queues BURST blocking calls
// to the pool (ThreadPool.QueueUserWorkItem, each Thread.Sleep(IO_MS)
// standing for a synchronous call to another service).
// Prints one `item` line per call, `sample` lines every 50 ms and a
// `summary` line, as service.cs does.
// Usage: ticker.exe [TICKS [PERIOD_MS [BURST [IO_MS]]]]
using System;
using System.Diagnostics;
using System.Reflection;
using System.Threading;

static class Ticker
{
    static long ThreadCount()
    {
        PropertyInfo p = typeof(ThreadPool).GetProperty("ThreadCount", BindingFlags.Public | BindingFlags.Static);
        return p == null ? -1 : Convert.ToInt64(p.GetValue(null, null));
    }

    static int Main(string[] args)
    {
        int ticks = args.Length > 0 ? int.Parse(args[0]) : 8;
        int periodMs = args.Length > 1 ? int.Parse(args[1]) : 500;
        int burst = args.Length > 2 ? int.Parse(args[2]) : 6;
        int ioMs = args.Length > 3 ? int.Parse(args[3]) : 800;
        int count = ticks * burst;
        var queued = new double[count];
        var started = new double[count];
        var finished = new double[count];
        int done = 0, tick = 0;
        var allDone = new ManualResetEvent(false);
        var sw = Stopwatch.StartNew();
        Func<double> now = () => sw.ElapsedTicks * 1000.0 / Stopwatch.Frequency;
        Timer timer = null;
        timer = new Timer(_ =>
        {
            int t = Interlocked.Increment(ref tick) - 1;
            if (t >= ticks) return;
            for (int j = 0; j < burst; j++)
            {
                int k = t * burst + j;
                queued[k] = now();
                ThreadPool.QueueUserWorkItem(__ =>
                {
                    started[k] = now();
                    Thread.Sleep(ioMs);
                    finished[k] = now();
                    if (Interlocked.Increment(ref done) == count) allDone.Set();
                });
            }
        }, null, 0, periodMs);
        long peak = 0;
        while (true)
        {
            long c = ThreadCount();
            if (c > peak) peak = c;
            Console.WriteLine("sample t_ms={0:F1} threads={1}", now(), c);
            if (allDone.WaitOne(50)) break;
        }
        timer.Dispose();
        long last = ThreadCount();
        if (last > peak) peak = last;
        var latency = new double[count];
        double first = queued[0], end = 0;
        for (int i = 0; i < count; i++)
        {
            latency[i] = finished[i] - queued[i];
            if (finished[i] > end) end = finished[i];
            if (queued[i] < first) first = queued[i];
            Console.WriteLine("item i={0} queued_ms={1:F3} start_ms={2:F3} end_ms={3:F3}", i, queued[i], started[i], finished[i]);
        }
        Array.Sort(latency);
        Func<double, double> q = p => latency[Math.Min(count - 1, (int)Math.Ceiling(p * count) - 1)];
        Console.WriteLine("summary items={0} peak_thread_count={1} makespan_ms={2:F1} latency_p50_ms={3:F1} latency_p99_ms={4:F1} latency_max_ms={5:F1}",
            count, peak, end - first, q(0.50), q(0.99), latency[count - 1]);
        return 0;
    }
}
