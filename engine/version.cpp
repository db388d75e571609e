#include "engine/version.h"

namespace hkt {

const char* version() { return HKT_VERSION; }  // set by CMakeLists.txt from project(VERSION)

}  // namespace hkt
