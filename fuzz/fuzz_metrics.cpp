// Fuzzes hkt-plot on a metrics.jsonl: the reader (parse_metrics, each line
// through parse_json) and, for what it accepts, the whole drawing — axes,
// ticks, smoothing, log scale — encoded as a PNG in memory, as hkt-plot
// --log-y --smooth 0.9 would write it. Any value must draw; only a bad line is an error.
#include <string_view>

#include "engine/error.h"
#include "tools/inspect/metrics_plot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const hkt::inspect::RunCurves run = hkt::inspect::parse_metrics(text, "metrics.jsonl", "fuzz");
    hkt::inspect::PlotOptions options;
    options.log_loss = size % 2 == 1;  // both scales, without a byte of the input to spend on it
    options.smoothing = size % 3 == 0 ? 0.9 : 0;
    (void)hkt::inspect::plot_runs({run}, options)->encode();
  } catch (const hkt::Error&) {
  }
  return 0;
}
