#pragma once
// The test faults, in one place, outside the model. Each is read from the
// environment by the code under test when it starts, never by a model's
// forward, and changes no forward value; no tool sets one by itself.
//
//   HKT_TEST_BREAK_BACKWARD=hkt_gate   gradcheck_model (hkt-inspect gradcheck)
//       runs with the CPU backward kernel of sigmoid doubled (swapped through
//       the dispatch table), so the gradient reaching HKT's gate_logit (the
//       models' one sigmoid: β = sigmoid(gate_logit), SPEC section 4) is twice
//       the true one and the gradient checker can be shown to fail.
//
// The training run's test hooks are options of the run (train/training.h):
// TrainOptions::stop_at (--stop-at: stop after a step as if interrupted) and
// TrainOptions::test_die_at_step (--test-die-at-step: the last rank dies).
#include <memory>

#include "engine/dispatch.h"

namespace hkt::inspect {

// The faults the environment asks for, active while this lives.
class TestFaults {
 public:
  TestFaults();

 private:
  std::unique_ptr<dispatch::KernelOverride> broken_gate_backward_;
};

}  // namespace hkt::inspect
