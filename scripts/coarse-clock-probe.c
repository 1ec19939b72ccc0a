/* How far CLOCK_MONOTONIC_COARSE (what .NET's Environment.TickCount and
 * the PAL's GetTickCount read on Linux) lags CLOCK_MONOTONIC, after idle
 * spells of several lengths, and how often two coarse readings taken
 * 500 ms + delta apart (the gate thread's "> 500 ms since the last
 * dequeue" test) differ by more than 500 ms.
 *
 *   gcc -O2 scripts/coarse-clock-probe.c -o coarse-clock-probe
 *   ./coarse-clock-probe [TRIES]
 *
 * A grid of step s read at a random phase lags 0-s (mean s/2) and gives
 * "> 500" with probability delta / s. See
 * docs/research/net8-first-tick-and-the-coarse-clock.md. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void sleep_ns(long ns) {
    struct timespec r = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&r, 0);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int tries = argc > 1 ? atoi(argv[1]) : 40;
    double *lag = malloc(sizeof(double) * tries);
    struct timespec res;
    clock_getres(CLOCK_MONOTONIC_COARSE, &res);
    double step_ms = res.tv_sec * 1e3 + res.tv_nsec / 1e6;
    printf("CLOCK_MONOTONIC_COARSE step: %.3f ms\n", step_ms);
    srand(1);
    long idles_us[] = {0, 1000, 3000, 10000, 100000};
    for (unsigned k = 0; k < sizeof idles_us / sizeof *idles_us; k++) {
        for (int i = 0; i < tries; i++) {
            sleep_ns(idles_us[k] * 1000L + (rand() % 4000) * 1000L);
            long c = now_ns(CLOCK_MONOTONIC_COARSE), f = now_ns(CLOCK_MONOTONIC);
            lag[i] = (f - c) / 1e6;
        }
        qsort(lag, tries, sizeof *lag, cmp);
        printf("after an idle spell of %5.1f-%5.1f ms: lag p10 %.2f  p50 %.2f  p90 %.2f  max %.2f ms\n",
               idles_us[k] / 1e3, idles_us[k] / 1e3 + 4, lag[tries / 10], lag[tries / 2],
               lag[tries * 9 / 10], lag[tries - 1]);
    }
    double deltas[] = {0.25, 0.5, 1.0, 2.0};
    for (unsigned k = 0; k < sizeof deltas / sizeof *deltas; k++) {
        int over = 0, n = tries / 2 > 8 ? tries / 2 : 8;
        for (int i = 0; i < n; i++) {
            sleep_ns((rand() % 4000) * 1000L);
            long s_coarse = now_ns(CLOCK_MONOTONIC_COARSE), s = now_ns(CLOCK_MONOTONIC);
            long target = s + 500000000L + (long)(deltas[k] * 1e6);
            struct timespec ts = {target / 1000000000L, target % 1000000000L};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, 0);
            long t_coarse = now_ns(CLOCK_MONOTONIC_COARSE);
            if (t_coarse / 1000000 - s_coarse / 1000000 > 500) over++;
        }
        printf("readings 500 + %.2f ms apart: %d of %d read > 500 ms (a grid at random phase: %.0f %%)\n",
               deltas[k], over, n, deltas[k] / step_ms * 100);
    }
    free(lag);
    return 0;
}
