#include "quant/graph/kernel_threads.h"

#include <omp.h>

namespace npuc::quant {

void useOneKernelThreadOnThisThread() {
  omp_set_num_threads(1);
}

}  // namespace npuc::quant
