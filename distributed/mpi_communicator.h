#pragma once
// The MPI communicator (built with HKT_WITH_MPI): MPI_COMM_WORLD, initialised
// with MPI_THREAD_MULTIPLE so that the watchdog's thread may call MPI_Abort
// while the main thread blocks in a collective.
#include <memory>

#include "distributed/communicator.h"

namespace hkt::distributed {

#ifdef HKT_WITH_MPI
std::unique_ptr<Communicator> make_mpi_communicator();
#endif

}  // namespace hkt::distributed
