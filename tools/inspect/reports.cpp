#include "tools/inspect/reports.h"

#include <cmath>

#include "tools/inspect/table.h"

namespace hkt::inspect {
namespace {

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Json shape_json(const Shape& shape) {
  Json out = Json::array();
  for (int64_t size : shape) out.push_back(size);
  return out;
}

std::string level_name(int64_t level) { return level < 0 ? "fused S" : "S^(" + std::to_string(level) + ")"; }

}  // namespace

Json number_or_null(double value) { return std::isfinite(value) ? Json(value) : Json(); }

std::string gradient_table(const std::vector<GradientRow>& rows) {
  Table table({"parameter", "shape", "|grad|", "max|grad|", "|param|", "|grad|/|param|", "note"});
  for (const GradientRow& row : rows) {
    std::string note = !row.has_grad ? "no grad" : row.nonfinite ? "NaN/inf x" + std::to_string(row.nonfinite) : "";
    table.add({row.name, shape_text(row.shape), format("%.3e", row.grad_norm), format("%.3e", row.grad_max_abs),
               format("%.3e", row.param_norm),
               row.param_norm > 0 ? format("%.3e", row.grad_norm / row.param_norm) : "-", note});
  }
  return table.str();
}

Json gradient_json(double loss, const std::vector<GradientRow>& rows) {
  Json parameters = Json::array();
  for (const GradientRow& row : rows)
    parameters.push_back(Json::object({{"name", row.name},
                                       {"shape", shape_json(row.shape)},
                                       {"grad_norm", number_or_null(row.grad_norm)},
                                       {"grad_max_abs", number_or_null(row.grad_max_abs)},
                                       {"param_norm", number_or_null(row.param_norm)},
                                       {"nonfinite", row.nonfinite},
                                       {"has_grad", row.has_grad}}));
  return Json::object({{"loss", number_or_null(loss)}, {"parameters", parameters}});
}

std::vector<std::string> nonfinite_gradients(const std::vector<GradientRow>& rows) {
  std::vector<std::string> names;
  for (const GradientRow& row : rows)
    if (row.nonfinite > 0) names.push_back(row.name);
  return names;
}

std::string gradcheck_table(const std::vector<GradcheckRow>& rows) {
  Table table({"parameter", "checked", "max abs err", "rel err", "analytic", "numeric", "result"});
  for (const GradcheckRow& row : rows)
    table.add({row.name, std::to_string(row.checked), format("%.2e", row.worst_error), format("%.2e", row.worst_relative),
               format("%.6e", row.analytic), format("%.6e", row.numeric), row.passed ? "ok" : "FAIL"});
  return table.str();
}

Json gradcheck_json(const std::vector<GradcheckRow>& rows, const GradcheckSettings& settings) {
  Json parameters = Json::array();
  bool passed = true;
  for (const GradcheckRow& row : rows) {
    passed = passed && row.passed;
    parameters.push_back(Json::object({{"name", row.name},
                                       {"checked", row.checked},
                                       {"max_abs_error", number_or_null(row.worst_error)},
                                       {"relative_error", number_or_null(row.worst_relative)},
                                       {"worst_index", row.worst_index},
                                       {"analytic", number_or_null(row.analytic)},
                                       {"numeric", number_or_null(row.numeric)},
                                       {"passed", row.passed}}));
  }
  return Json::object({{"passed", passed},
                       {"eps", settings.eps},
                       {"atol", settings.atol},
                       {"rtol", settings.rtol},
                       {"per_parameter", settings.per_parameter},
                       {"parameters", parameters}});
}

std::string kurtosis_table(const std::vector<ScoreKurtosis>& rows) {
  Table table({"block", "scores", "samples", "p", "b2,p", "kappa = b2,p/(p(p+2))"});
  for (const ScoreKurtosis& row : rows)
    table.add({std::to_string(row.block), level_name(row.level), std::to_string(row.kurtosis.samples),
               std::to_string(row.kurtosis.dims), format("%.3f", row.kurtosis.b2p),
               format("%.3f", row.kurtosis.normalised)});
  return table.str();
}

std::string bilinear_table(const std::vector<BilinearSplit>& rows) {
  Table table({"block", "level", "head", "|M|_F", "|sym|_F", "|anti|_F", "anti^2/|M|^2"});
  for (const BilinearSplit& row : rows)
    table.add({std::to_string(row.block), std::to_string(row.level), std::to_string(row.head),
               format("%.4f", row.norm), format("%.4f", row.symmetric), format("%.4f", row.antisymmetric),
               row.norm > 0 ? format("%.3f", row.antisymmetric * row.antisymmetric / (row.norm * row.norm)) : "-"});
  return table.str();
}

std::string cost_table(const ScoreCost& cost) {
  Table table({"level", "T_l", "entries T_l^2", "/ T^2", "bound s^-2l"});
  for (const LevelCost& level : cost.levels)
    table.add({std::to_string(level.level), std::to_string(level.length), std::to_string(level.entries),
               format("%.4f", level.relative), format("%.4f", level.bound_term)});
  table.add({"total", "", "", format("%.4f", cost.ratio), format("%.4f", cost.bound)});
  return table.str();
}

Json analysis_json(const std::vector<ScoreKurtosis>& kurtosis, const std::vector<BilinearSplit>& splits,
                   const ScoreCost& cost) {
  Json kurtosis_rows = Json::array();
  for (const ScoreKurtosis& row : kurtosis)
    kurtosis_rows.push_back(Json::object({{"block", row.block},
                                          {"level", row.level < 0 ? Json("fused") : Json(row.level)},
                                          {"samples", row.kurtosis.samples},
                                          {"p", row.kurtosis.dims},
                                          {"b2p", number_or_null(row.kurtosis.b2p)},
                                          {"kappa", number_or_null(row.kurtosis.normalised)}}));
  Json split_rows = Json::array();
  for (const BilinearSplit& row : splits)
    split_rows.push_back(Json::object({{"block", row.block},
                                       {"level", row.level},
                                       {"head", row.head},
                                       {"norm", row.norm},
                                       {"symmetric", row.symmetric},
                                       {"antisymmetric", row.antisymmetric}}));
  Json levels = Json::array();
  for (const LevelCost& level : cost.levels)
    levels.push_back(Json::object({{"level", level.level},
                                   {"length", level.length},
                                   {"entries", level.entries},
                                   {"relative", level.relative},
                                   {"bound_term", level.bound_term}}));
  return Json::object({{"kurtosis_normalisation", "b2p / (p (p + 2)), Gaussian = 1"},
                       {"kurtosis", kurtosis_rows},
                       {"bilinear", split_rows},
                       {"score_cost", Json::object({{"levels", levels},
                                                    {"ratio", cost.ratio},
                                                    {"bound", cost.bound},
                                                    {"limit", cost.limit}})}});
}

}  // namespace hkt::inspect
