#pragma once
// Choosing a device from user input (tools' --device), with the errors a user
// sees when it cannot be used. Implemented in engine/dispatch.cpp, which knows
// the backends.
#include <string>

#include "engine/device.h"

namespace hkt::dispatch {

// "cpu", "cuda" (= "cuda:0") or "cuda:N"; anything else throws naming the text.
Device parse_device(const std::string& text);

// Throws unless tensors can live on `device` now: "cuda:0: no CUDA device is
// present on this machine ...", or that this build has no CUDA backend.
void require_device(Device device);

}  // namespace hkt::dispatch
