/* How Linux shares the cores among more runnable threads than cores, with
 * no runtime in the way: a plain pool of T worker threads (a mutex, a
 * condition variable, a FIFO) runs N items of W ms of calibrated CPU work
 * each, submitted every G ms on the absolute clock, and prints the items'
 * latency (queued -> finished), their run time (started -> finished) and
 * their wait (queued -> started), as quantiles.
 *
 *   gcc -O2 -pthread scripts/cpu-sharing-probe.c -o cpu-sharing-probe
 *   taskset -c 0-1 ./cpu-sharing-probe N G W T
 *
 * The engine shares the cores by processor sharing: n runnable jobs on c
 * cores each run at min(1, c/n) of a core (crates/core/src/engine/cpu.rs).
 * With items every 9.6 ms of 17.3 ms each on 2 cores (load 0.9, the shape
 * of the apps grammar's apps-2-05) no more than two items ever overlap
 * under processor sharing and every item takes 17.3 ms. Linux keeps a run
 * queue per core: a third runnable thread shares one core with one of the
 * two (each at half speed) while the other runs alone, and load balancing
 * moves it only now and then; with arrivals a little late the overlap
 * feeds itself. Measured on a 2-core KVM guest (AMD EPYC), four runs of
 * `966 9.6 17.3 4`: latency p50 17.3-17.4 ms, p90 17.7-25.9 ms, p99 24.2,
 * 24.9, 30.4 and 34.9 ms; with T = 2 (never more threads than cores) p99
 * 19.5 and 20.3 ms. The same
 * scenario on .NET 8 (poolsim measure) gave latency p50 21.4-25.8 ms and
 * p99 37.8-45.7 ms: the part over this probe's is the runtime's own
 * (dispatch, the Task.Yield continuation, workers spinning for work), not
 * found yet. See tests/fixtures/generated-apps-2/KNOWN_MISSES. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static volatile unsigned long sink;
static double iterations_per_ms;

static void burn(long n) {
    unsigned long x = 12345;
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    sink = x;
}

enum { MAX_ITEMS = 200000 };
static double queued[MAX_ITEMS], started[MAX_ITEMS], finished[MAX_ITEMS];
static int head, tail, done;
static double work_ms;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (head == tail && !done)
            pthread_cond_wait(&ready, &lock);
        if (head == tail) {
            pthread_mutex_unlock(&lock);
            return 0;
        }
        int i = head++;
        pthread_mutex_unlock(&lock);
        started[i] = now_ms(CLOCK_MONOTONIC);
        burn((long)(iterations_per_ms * work_ms));
        finished[i] = now_ms(CLOCK_MONOTONIC);
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quantiles(const char *name, double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    printf("%-8s p10 %6.1f  p50 %6.1f  p90 %6.1f  p99 %6.1f  max %6.1f ms\n", name,
           v[n / 10], v[n / 2], v[n * 9 / 10], v[n * 99 / 100], v[n - 1]);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s ITEMS GAP_MS WORK_MS THREADS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), threads = atoi(argv[4]);
    double gap = atof(argv[2]);
    work_ms = atof(argv[3]);
    if (n < 1 || n > MAX_ITEMS || threads < 1 || threads > 256 || gap < 0 || work_ms < 0) {
        fprintf(stderr, "ITEMS 1..%d, THREADS 1..256, GAP_MS and WORK_MS 0 or more\n", MAX_ITEMS);
        return 2;
    }
    /* Calibrated on this thread's CPU clock, alone, as the harness does. */
    double c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
    burn(50000000);
    iterations_per_ms = 50000000 / (now_ms(CLOCK_THREAD_CPUTIME_ID) - c0);

    pthread_t *t = malloc(sizeof *t * threads);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], 0, worker, 0);
    struct timespec base;
    clock_gettime(CLOCK_MONOTONIC, &base);
    for (int i = 0; i < n; i++) {
        long ns = (long)(i * gap * 1e6);
        struct timespec at = base;
        at.tv_sec += ns / 1000000000L;
        at.tv_nsec += ns % 1000000000L;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, 0);
        pthread_mutex_lock(&lock);
        queued[tail++] = now_ms(CLOCK_MONOTONIC);
        pthread_cond_signal(&ready);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&ready);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], 0);

    double *lat = malloc(sizeof *lat * n), *run = malloc(sizeof *run * n), *wait = malloc(sizeof *wait * n);
    double last = 0;
    for (int i = 0; i < n; i++) {
        if (finished[i] > last)
            last = finished[i];
        lat[i] = finished[i] - queued[i];
        run[i] = finished[i] - started[i];
        wait[i] = started[i] - queued[i];
    }
    printf("%d items of %.1f ms every %.1f ms on %d threads: makespan %.1f ms\n", n, work_ms, gap,
           threads, last - queued[0]);
    quantiles("latency", lat, n);
    quantiles("run", run, n);
    quantiles("wait", wait, n);
    return 0;
}
