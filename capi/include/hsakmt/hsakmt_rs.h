/*
 * hsakmt-rs extensions of libhsakmt's API (not in upstream libhsakmt).
 * Part of hsakmt-rs; licensed MIT OR Apache-2.0.
 *
 * - hsaKmtQueueRingDoorbell: ROCr's DTIF doorbell. Rings a queue's doorbell with its current
 *   write pointer (for an AQL queue the index of the last packet written). On the simulator
 *   (HSAKMT_DRIVER=sim) this is how the command processor learns of new work; on hardware it is
 *   the doorbell store.
 * - hsakmt_rs_close_dmabuf: closes a descriptor from hsaKmtExportDMABufHandle, as close(2)
 *   does: on a real device it is close(2); over the simulator, whose dma-bufs are descriptors
 *   of the process too (a memfd standing for each), it also releases the simulated dma-buf at
 *   once (after close(2) the simulator notices at its next dma-buf operation).
 * - hsakmt_rs_sim_accounting: what the simulated kernel holds for the process (buffers, queues,
 *   events, ...), to check that nothing leaked. HSAKMT_STATUS_NOT_SUPPORTED on a real device.
 */

#ifndef _HSAKMT_RS_H_
#define _HSAKMT_RS_H_

#include "hsakmt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct _HsakmtRsSimAccounting
{
    HSAuint64 open;             /* 1 when /dev/kfd is open by the calling process */
    HSAuint64 buffers;          /* live buffer objects, on every GPU */
    HSAuint64 mappings;         /* buffer mappings (a buffer mapped on n GPUs counts n) */
    HSAuint64 vram_bytes;       /* VRAM bytes allocated */
    HSAuint64 system_bytes;     /* system-memory bytes (GTT and user-pointer buffers) */
    HSAuint64 pinned_buffers;   /* buffers a queue uses */
    HSAuint64 dmabufs;          /* live dma-bufs */
    HSAuint64 svm_ranges;       /* SVM ranges with attributes */
    HSAuint64 scratch_backings; /* GPUs with a scratch backing programmed */
    HSAuint64 queues;           /* user queues */
    HSAuint64 events;           /* events */
    HSAuint64 event_waiters;    /* threads blocked in WAIT_EVENTS */
} HsakmtRsSimAccounting;

HSAKMT_STATUS HSAKMTAPI hsaKmtQueueRingDoorbell(HSA_QUEUEID QueueId);

HSAKMT_STATUS HSAKMTAPI hsakmt_rs_close_dmabuf(int DMABufFd);

HSAKMT_STATUS HSAKMTAPI hsakmt_rs_sim_accounting(HsakmtRsSimAccounting *Accounting);

#ifdef __cplusplus
}
#endif

#endif /* _HSAKMT_RS_H_ */
