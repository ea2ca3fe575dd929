/* The C ABI test of hsakmt-rs's libhsakmt: checks and helpers shared by its parts.
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0. */
#ifndef HSAKMT_RS_TEST_CHECK_H
#define HSAKMT_RS_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* hsakmt.h names struct kfd_ioctl_dbg_trap_args without declaring it, as upstream's does
 * (its definition, in hsakmt/linux/kfd_ioctl.h, needs the kernel's <drm/drm.h>). */
struct kfd_ioctl_dbg_trap_args;
#include "hsakmt/hsakmt.h"
#include "hsakmt/hsakmt_rs.h"

extern int g_passed, g_failed;

/* A check: counts it, reports a failure with its place. */
#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (cond) {                                                             \
            g_passed++;                                                         \
        } else {                                                                \
            g_failed++;                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fprintf(stderr, "\n");                                              \
        }                                                                       \
    } while (0)

/* `call` must answer `expected`. */
#define EXPECT(expected, call)                                                  \
    do {                                                                        \
        HSAKMT_STATUS s_ = (call);                                              \
        CHECK(s_ == (expected), "%s returned %d, expected %d (%s)", #call,     \
              (int)s_, (int)(expected), #expected);                             \
    } while (0)

#define EXPECT_OK(call) EXPECT(HSAKMT_STATUS_SUCCESS, call)

/* What the tests learn about the system once. */
struct system {
    HSAuint32 nodes;
    HSAuint32 cpu;      /* a CPU node */
    HSAuint32 gpu;      /* the first GPU node with a gpu_id, or INVALID_NODEID */
    int svm_api;        /* every GPU supports the SVM API (upstream's free/unmap answers) */
    int dgpu;           /* a system with a discrete GPU */
    int topology_only;  /* GPU nodes without a gpu_id (a topology capture, not a device) */
    HsaNodeProperties gpu_props;
};

extern struct system g_sys;

/* Flags from their fields. */
HsaMemFlags mem_flags(int host_access, int non_paged);

/* Allocates `size` bytes on `node`, expecting success; NULL on failure. */
void *alloc_ok(HSAuint32 node, HSAuint64 size, HsaMemFlags flags);

/* Waits up to ~2 s for *p == value; returns whether it came. */
int wait_u32(volatile uint32_t *p, uint32_t value);
int wait_u64(volatile uint64_t *p, uint64_t value);

/* The simulator's accounting, or a zeroed one when unavailable. */
HsakmtRsSimAccounting accounting(void);
int same_accounting(const HsakmtRsSimAccounting *a, const HsakmtRsSimAccounting *b);

void test_topology(void);
void test_memory(void);
void test_register(void);
void test_queues(void);
void test_events(void);
void test_unsupported(void);
void test_debugger(void);
void test_counters(void);
void test_smi(void);
void test_bad_input(void);
void test_threads(void);
void test_consumers(void);

#endif
