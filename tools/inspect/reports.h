#pragma once
// The text tables and JSON of the hkt-inspect subcommands, kept apart from
// the command line so that tests read exactly what users read.
#include <string>
#include <vector>

#include "io/json.h"
#include "tools/inspect/analysis.h"
#include "tools/inspect/gradients.h"

namespace hkt::inspect {

// JSON has no NaN or infinity: those become null.
Json number_or_null(double value);

// grads: a row per parameter; the note column says "NaN/inf xN" or "no grad".
std::string gradient_table(const std::vector<GradientRow>& rows);
Json gradient_json(double loss, const std::vector<GradientRow>& rows);
// Names of the parameters whose gradient has a NaN or infinite entry.
std::vector<std::string> nonfinite_gradients(const std::vector<GradientRow>& rows);

std::string gradcheck_table(const std::vector<GradcheckRow>& rows);
Json gradcheck_json(const std::vector<GradcheckRow>& rows, const GradcheckSettings& settings);

std::string kurtosis_table(const std::vector<ScoreKurtosis>& rows);
std::string bilinear_table(const std::vector<BilinearSplit>& rows);
std::string cost_table(const ScoreCost& cost);
Json analysis_json(const std::vector<ScoreKurtosis>& kurtosis, const std::vector<BilinearSplit>& splits,
                   const ScoreCost& cost);

}  // namespace hkt::inspect
