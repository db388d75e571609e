#include "engine/dtype.h"

#include <sstream>

#include "engine/device.h"
#include "engine/error.h"

namespace hkt {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
  }
  fail("dtype_size: unknown dtype ", static_cast<int>(dtype));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
  }
  return "unknown";
}

bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64; }

std::string Device::str() const { return type == DeviceType::CPU ? "cpu" : "cuda:" + std::to_string(index); }

void append_message(std::ostream& out, const Shape& shape) {
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
}

std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  append_message(out, shape);
  return out.str();
}

void append_message(std::ostream& out, const Device& device) { out << device.str(); }

}  // namespace hkt
