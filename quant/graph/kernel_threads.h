// The host kernels' thread count for the calling thread. oneDNN (Debian's build) runs its
// primitives with OpenMP, with as many threads as the calling thread's OpenMP nthreads-var; a
// calibration worker that runs one sample per core must give its kernels one thread, or two
// workers each start a team per core and the cores are oversubscribed (on a loaded 2-core
// machine the OpenMP barriers then wait on descheduled threads: 2.4x slower per sample).
#pragma once

namespace npuc::quant {

// Sets the calling thread's OpenMP thread count to 1 (threads created by the caller are not
// affected; call it on a worker thread that the library owns, never on the user's).
void useOneKernelThreadOnThisThread();

}  // namespace npuc::quant
