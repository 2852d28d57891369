// Running the program again on better BLAS kernels (tensor/blas_setup.h
// says why): the part only main() may do, so it lives with main().
#ifndef TS_CLI_BLAS_RERUN_H
#define TS_CLI_BLAS_RERUN_H

// Sets what ts_blas_rerun_plan asks for and runs the program again
// (execv of /proc/self/exe with the same argv), once: a marker variable
// stops a second run. Does not return when it re-runs; otherwise returns
// (a failed re-run is noted in ts_blas_kernels and the program carries on
// with OpenBLAS's kernels). Call it first thing in main(), before reading
// stdin or starting a thread; argv must be main's.
void ts_cli_blas_init(int argc, char **argv);

#endif
