/* The plain-C reference of benchmarks/bench_network.py: a ping-pong and a windowed-bandwidth loop
 * written the way the OSU Micro-Benchmarks define them (osu_latency, osu_bw), against MPI's own
 * header, built with each MPI's compiler wrapper (mpicc_abi, mpicc.openmpi, mpicc.mpich), run by that MPI's mpiexec on the same
 * ranks as xferlab. Not xferlab code: it shares nothing with native/probe/network.cpp.
 *
 * usage: pingpong LAT_BYTES LAT_ITERATIONS LAT_WARMUP BW_BYTES BW_ITERATIONS BW_WARMUP WINDOW
 * Each rank pins itself to the rank-th CPU it may use (as xferlab's --bind core does).
 * Rank 0 prints "latency_seconds X" (one way: timer / iterations / 2) and
 * "bandwidth_bytes_per_second Y" (bytes / timer).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void pin(int rank) {
  cpu_set_t allowed, one;
  sched_getaffinity(0, sizeof allowed, &allowed);
  int n = CPU_COUNT(&allowed), seen = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed)) continue;
    if (seen++ == rank % n) {
      CPU_ZERO(&one);
      CPU_SET(c, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc != 8) {
    if (rank == 0) fprintf(stderr, "usage: pingpong LAT_BYTES LAT_ITERS LAT_WARMUP BW_BYTES BW_ITERS BW_WARMUP WINDOW\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int lat_bytes = atoi(argv[1]), lat_iters = atoi(argv[2]), lat_warm = atoi(argv[3]);
  int bw_bytes = atoi(argv[4]), bw_iters = atoi(argv[5]), bw_warm = atoi(argv[6]), window = atoi(argv[7]);
  pin(rank);
  size_t biggest = (size_t)(lat_bytes > bw_bytes ? lat_bytes : bw_bytes) + 1;
  char *sbuf = aligned_alloc(4096, (biggest + 4095) / 4096 * 4096), *rbuf = aligned_alloc(4096, (biggest + 4095) / 4096 * 4096);
  memset(sbuf, 'a', biggest);
  memset(rbuf, 'b', biggest);
  MPI_Request* requests = malloc(sizeof(MPI_Request) * window);
  double start = 0;

  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < lat_warm + lat_iters; ++i) {
    if (i == lat_warm) start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(sbuf, lat_bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(rbuf, lat_bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(rbuf, lat_bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(sbuf, lat_bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
  }
  double latency = (MPI_Wtime() - start) / lat_iters / 2;

  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < bw_warm + bw_iters; ++i) {
    if (i == bw_warm) start = MPI_Wtime();
    if (rank == 0) {
      for (int w = 0; w < window; ++w) MPI_Isend(sbuf, bw_bytes, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &requests[w]);
      MPI_Waitall(window, requests, MPI_STATUSES_IGNORE);
      MPI_Recv(rbuf, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      for (int w = 0; w < window; ++w) MPI_Irecv(rbuf, bw_bytes, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &requests[w]);
      MPI_Waitall(window, requests, MPI_STATUSES_IGNORE);
      MPI_Send(sbuf, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    }
  }
  double seconds = MPI_Wtime() - start;
  if (rank == 0) {
    printf("latency_seconds %.9g\n", latency);
    printf("bandwidth_bytes_per_second %.9g\n", (double)bw_bytes * window * bw_iters / seconds);
  }
  free(requests);
  free(sbuf);
  free(rbuf);
  MPI_Finalize();
  return 0;
}
