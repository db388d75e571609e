#pragma once
// The project's version: CMake's project(VERSION), the one place it is set.
// The tools print it for --version, hkt-train in its header line and in a
// run's config.json.
namespace hkt {

const char* version();

}  // namespace hkt
