/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fork(): the child inherits cuabi's state (docs/abi.md) and never inherits a
 * held lock. Scenarios (argv[1]), each its own process:
 *   after-load   the parent loads and resolves, then forks; the child calls
 *                resolved and unresolved entry points and cuabi_call;
 *   before-load  the parent forks before any cuabi call; child and parent
 *                each load on their own;
 *   during-calls a thread keeps taking cuabi's lock (cuabi_call cache inserts)
 *                while the main thread forks; every child must finish.
 */
#define _GNU_SOURCE
#include "support.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *scenario;

/* Runs fn in a child that must exit 0 within 20 seconds. */
static void in_child(int (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a deadlocked child dies instead of hanging the suite */
        _exit(fn());
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        print_error("child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int child_uses_inherited_state(void)
{
    int version = 0, count = 0;
    if (cuabi_driver_status() != CUDA_SUCCESS)
        return 10;
    if (strstr(cuabi_driver_report(), "opened") == NULL)
        return 11;
    if (cuabi_cuDriverGetVersion(&version) != CUDA_SUCCESS || version != 13000)
        return 12; /* resolved in the parent */
    if (cuabi_cuDeviceGetCount(&count) != CUDA_SUCCESS || count != 1)
        return 13; /* first resolved here (cuInit was called in the parent) */
    int *pv = &version;
    void *args[] = { &pv };
    if (cuabi_call("cuDriverGetVersion", 2020, "p", args) != CUDA_SUCCESS)
        return 14;
    return 0;
}

static void test_after_load(void)
{
    int version = 0;
    check_cu(cuabi_cuDriverGetVersion(&version));
    check_cu(cuabi_cuInit(0));
    in_child(child_uses_inherited_state);
    /* The parent is unaffected. */
    int count = 0;
    check_cu(cuabi_cuDeviceGetCount(&count));
    assert_int_equal(count, 1);
}

static int child_loads_by_itself(void)
{
    int version = 0;
    if (cuabi_cuDriverGetVersion(&version) != CUDA_SUCCESS || version != 13000)
        return 20;
    return cuabi_cuInit(0) == CUDA_SUCCESS ? 0 : 21;
}

static void test_before_load(void)
{
    in_child(child_loads_by_itself);
    in_child(child_loads_by_itself);
    int version = 0;
    check_cu(cuabi_cuDriverGetVersion(&version));
    assert_int_equal(version, 13000);
}

static _Atomic int stop;

static void *insert_calls(void *arg)
{
    (void)arg;
    /* Each new (name, version, signature) is a cache insert under cuabi's lock. */
    for (int v = 2020; !stop && v < 2020 + 100000; v++) {
        int version = 0;
        int *pv = &version;
        void *args[] = { &pv };
        cuabi_call("cuDriverGetVersion", v % 11000 + 2020, "p", args);
    }
    return NULL;
}

static int child_takes_the_lock(void)
{
    int version = 0;
    int *pv = &version;
    void *args[] = { &pv };
    /* A version no one used yet: an insert, so the lock must be free. */
    CUresult rc = cuabi_call("cuDriverGetVersion", 12999, "p", args);
    return rc == CUDA_SUCCESS && version == 13000 ? 0 : 30;
}

static void test_during_calls(void)
{
    check_cu(cuabi_driver_status());
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, insert_calls, NULL), 0);
    for (int i = 0; i < 20; i++)
        in_child(child_takes_the_lock);
    stop = 1;
    assert_int_equal(pthread_join(thread, NULL), 0);
}

static void test_fork(void **state)
{
    (void)state;
    if (strcmp(scenario, "after-load") == 0)
        test_after_load();
    else if (strcmp(scenario, "before-load") == 0)
        test_before_load();
    else if (strcmp(scenario, "during-calls") == 0)
        test_during_calls();
    else
        fail_msg("unknown scenario %s", scenario);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_fork after-load|before-load|during-calls\n");
        return 2;
    }
    scenario = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork),
    };
    return cmocka_run_group_tests_name(scenario, tests, NULL, NULL);
}
