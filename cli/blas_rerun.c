// main()'s side of choosing the BLAS kernels (cli/blas_rerun.h).
#include "cli/blas_rerun.h"

#include "tensor/blas_setup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void ts_cli_blas_init(int argc, char **argv) {
    ts_blas_rerun plan;
    if (!ts_blas_rerun_plan(&plan) || argc < 1 || !argv || !argv[0] || argv[argc]) return;
    if ((plan.core && setenv("OPENBLAS_CORETYPE", plan.core, 1)) ||
        (plan.timeout && setenv("OPENBLAS_THREAD_TIMEOUT", plan.timeout, 1)) || setenv(plan.marker_name, plan.marker, 1))
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    ts_blas_rerun_failed(&plan, errno);  // still here: carry on with what OpenBLAS chose
}
