#pragma once
// The whole public API: #include "hkt.h".
#include "engine/autograd.h"
#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/error.h"
#include "engine/random.h"
#include "engine/tensor.h"
#include "ops/copy.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape.h"
