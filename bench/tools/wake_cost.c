/* What waking an idle thread costs the waker on this host (docs/PERFORMANCE.md, "Two workers").
 *
 *   gcc -O2 -o /tmp/wake_cost bench/tools/wake_cost.c -lpthread
 *   /tmp/wake_cost 0 && /tmp/wake_cost 40000 && /tmp/wake_cost 100000
 *
 * One thread waits on an eventfd in epoll_wait, as a parked tokio worker does; the main thread
 * spins for the given nanoseconds of "work", then writes the eventfd, timing the write. With
 * no work between writes the waiter is still awake; with tens of microseconds it has gone idle,
 * and the write pays for waking it. 20,000 writes, the average printed. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int efd, ep;

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *waiter(void *unused) {
    (void)unused;
    struct epoll_event ev;
    uint64_t v;
    for (;;) {
        if (epoll_wait(ep, &ev, 1, -1) > 0 && read(efd, &v, sizeof v) < 0) {
            /* Nothing to read: another write will come. */
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    double work = argc > 1 ? atof(argv[1]) : 0;
    efd = eventfd(0, EFD_NONBLOCK);
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    if (efd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) < 0) {
        perror("eventfd/epoll");
        return 1;
    }
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    usleep(10000);
    const int n = 20000;
    volatile double spin = 0;
    double writing = 0, start = now_ns();
    for (int i = 0; i < n; i++) {
        double w0 = now_ns();
        while (now_ns() - w0 < work) spin += 1;
        uint64_t one = 1;
        double a = now_ns();
        if (write(efd, &one, sizeof one) != sizeof one) {
            perror("write");
            return 1;
        }
        writing += now_ns() - a;
    }
    printf("work %.0f ns: write %.0f ns on average, %.0f ns per iteration\n", work, writing / n,
           (now_ns() - start) / n);
    return 0;
}
