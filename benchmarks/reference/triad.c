/* The reference for benchmarks/bench_stream.py: a plain STREAM-style triad, a[i] = b[i] + q * c[i],
 * built with `cc -O3 -fopenmp` and nothing else, timed with omp_get_wtime as STREAM does.
 * Usage: triad ELEMENTS ITERATIONS; prints the best rate in bytes per second (3 x 8 x N / time). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: triad ELEMENTS ITERATIONS\n");
    return 2;
  }
  long n = atol(argv[1]);
  int iterations = atoi(argv[2]);
  double* a = malloc(n * sizeof(double));
  double* b = malloc(n * sizeof(double));
  double* c = malloc(n * sizeof(double));
  if (!a || !b || !c) return 1;
#pragma omp parallel for
  for (long i = 0; i < n; i++) {
    a[i] = 1.0;
    b[i] = 2.0;
    c[i] = 0.5;
  }
  const double q = 3.0;
  double best = 1e30;
  for (int k = 0; k < iterations; k++) {
    double t = omp_get_wtime();
#pragma omp parallel for
    for (long i = 0; i < n; i++) a[i] = b[i] + q * c[i];
    t = omp_get_wtime() - t;
    if (k > 0 && t < best) best = t;
  }
  for (long i = 0; i < n; i++)
    if (a[i] != 3.5) {
      fprintf(stderr, "triad: wrong result at %ld\n", i);
      return 1;
    }
  printf("%.6e\n", 3.0 * sizeof(double) * n / best);
  free(a);
  free(b);
  free(c);
  return 0;
}
