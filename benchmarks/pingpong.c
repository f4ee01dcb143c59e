/*
 * pingpong.c - a native C ping-pong with IMB-MPI1 PingPong semantics, written for beff as the
 * baseline that benchmarks/pingpong_overhead.py compares `beff imb mpi1 PingPong` against.
 *
 *   rank 0: MPI_Send(X bytes) to rank 1, then MPI_Recv(X bytes) from rank 1
 *   rank 1: MPI_Recv(X bytes) from rank 0, then MPI_Send(X bytes) to rank 0
 *
 * MPI_BYTE, specific source, tag 1, on MPI_COMM_WORLD (exactly 2 ranks).  Per size: an untimed
 * warm-up (n/10 iterations, at least min(10, n), as IMB 2021 and beff), 2 barriers, then the
 * whole loop of n round trips is timed with MPI_Wtime and t = loop time / n / 2 (half a round
 * trip).  n = 1000, or 40 MiB / X when that is smaller (at least 1), as IMB's defaults.
 *
 * Buffers are laid out as beff's (beff/core/buffers.py): X + alignment bytes are allocated, the
 * buffer starts on a 2 MiB boundary when X >= 1 MiB, else on a 64-byte line, and buffers of
 * at least 1 MiB are madvise(MADV_HUGEPAGE)d, as beff does (this matters when transparent
 * hugepages are in "madvise" mode).  Buffers are filled (so touched) before timing.
 *
 * Usage: mpiexec -n 2 ./pingpong [BYTES ...]      (default: 0 1024 1048576 4194304)
 *
 * Output (rank 0, one line each, whitespace-separated key=value pairs):
 *   library <first line of MPI_Get_library_version>
 *   pingpong bytes=X reps=n t_min_us=.. t_max_us=.. t_avg_us=.. mbytes_per_sec=..
 * where t_* are over the two ranks and Mbytes/sec = X / t_max / 10^6, as IMB reports it.
 */

#define _DEFAULT_SOURCE /* MADV_HUGEPAGE under strict -std= flags */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define TAG 1
#define N_BARR 2
#define MSGSPERSAMPLE 1000L
#define OVERALL_VOL (40L << 20)
#define HUGEPAGE (2UL << 20)
#define SMALL_ALIGN 64UL
#define HUGEPAGE_THRESHOLD (1UL << 20)
#define PAGE 4096UL

static long repetitions(long nbytes)
{
    long n = MSGSPERSAMPLE;
    if (nbytes > 0 && OVERALL_VOL / nbytes < n)
        n = OVERALL_VOL / nbytes;
    return n < 1 ? 1 : n;
}

static long warmup_iterations(long n)
{
    long w = n / 10;
    if (w < 10)
        return n < 10 ? n : 10;
    return w;
}

/* A buffer of nbytes inside *raw (which the caller frees), aligned and advised as beff's. */
static char *buffer(long nbytes, int fill, void **raw)
{
    size_t align = nbytes >= (1L << 20) ? HUGEPAGE : SMALL_ALIGN;
    size_t total = (size_t)nbytes + align;
    uintptr_t base;
    *raw = malloc(total);
    if (*raw == NULL) {
        fprintf(stderr, "pingpong: cannot allocate %zu bytes\n", total);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    base = (uintptr_t)*raw;
#ifdef MADV_HUGEPAGE
    if ((size_t)nbytes >= HUGEPAGE_THRESHOLD) {
        uintptr_t start = (base + PAGE - 1) & ~(PAGE - 1), end = base + total;
        if (end > start)
            madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    base = (base + align - 1) & ~(uintptr_t)(align - 1);
    memset((void *)base, fill, (size_t)nbytes);
    return (char *)base;
}

/* n round trips; returns the loop time in seconds. */
static double loop(int rank, char *sbuf, char *rbuf, int count, long n)
{
    double t0;
    long i;
    if (rank == 0) {
        t0 = MPI_Wtime();
        for (i = 0; i < n; i++) {
            MPI_Send(sbuf, count, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
            MPI_Recv(rbuf, count, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else {
        t0 = MPI_Wtime();
        for (i = 0; i < n; i++) {
            MPI_Recv(rbuf, count, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, count, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    static const long defaults[] = {0, 1024, 1048576, 4194304};
    int rank, size, nsizes, k, j, len;
    long *sizes;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: run with exactly 2 ranks (got %d)\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    nsizes = argc > 1 ? argc - 1 : (int)(sizeof defaults / sizeof defaults[0]);
    sizes = malloc((size_t)nsizes * sizeof *sizes);
    for (k = 0; k < nsizes; k++) {
        char *end = NULL;
        sizes[k] = argc > 1 ? strtol(argv[k + 1], &end, 10) : defaults[k];
        if (argc > 1 && (*end != '\0' || sizes[k] < 0 || sizes[k] > 0x7fffffffL)) {
            if (rank == 0)
                fprintf(stderr, "pingpong: not a message length in bytes: %s\n", argv[k + 1]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }

    if (rank == 0) {
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\r\n")] = '\0';
        printf("library %s\n", version);
        fflush(stdout);
    }

    for (k = 0; k < nsizes; k++) {
        long nbytes = sizes[k], n = repetitions(nbytes);
        void *sraw, *rraw;
        char *sbuf = buffer(nbytes, 'a' + rank, &sraw), *rbuf = buffer(nbytes, 0, &rraw);
        double t, tmin, tmax, tsum;

        loop(rank, sbuf, rbuf, (int)nbytes, warmup_iterations(n));
        for (j = 0; j < N_BARR; j++)
            MPI_Barrier(MPI_COMM_WORLD);
        t = loop(rank, sbuf, rbuf, (int)nbytes, n) / (double)n / 2.0;

        MPI_Reduce(&t, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("pingpong bytes=%ld reps=%ld t_min_us=%.4f t_max_us=%.4f t_avg_us=%.4f "
                   "mbytes_per_sec=%.2f\n",
                   nbytes, n, tmin * 1e6, tmax * 1e6, tsum / size * 1e6,
                   tmax > 0 ? (double)nbytes / tmax / 1e6 : 0.0);
            fflush(stdout);
        }
        free(sraw);
        free(rraw);
    }

    free(sizes);
    MPI_Finalize();
    return 0;
}
