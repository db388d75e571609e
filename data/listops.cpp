#include "data/listops.h"

#include <algorithm>

#include "io/files.h"

namespace hkt::data {
namespace {

constexpr int32_t kFirstDigit = 1, kMax = 11, kMin = 12, kMed = 13, kSumMod = 14, kClose = 15, kOpenParen = 16,
                  kCloseParen = 17;
constexpr const char* kOperatorNames[] = {"[MAX", "[MIN", "[MED", "[SM"};
constexpr std::string_view kHeader = "Source\tTarget";

// Space-separated tokens (runs of spaces count as one separator).
std::vector<std::string_view> split_tokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  size_t position = 0;
  while (position < text.size()) {
    if (text[position] == ' ') {
      ++position;
      continue;
    }
    size_t end = text.find(' ', position);
    if (end == std::string_view::npos) end = text.size();
    tokens.push_back(text.substr(position, end - position));
    position = end;
  }
  return tokens;
}

int apply_operator(int32_t op, std::vector<int>& values) {
  switch (op) {
    case kMax: return *std::max_element(values.begin(), values.end());
    case kMin: return *std::min_element(values.begin(), values.end());
    case kMed: {
      std::sort(values.begin(), values.end());
      const size_t n = values.size();
      return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    }
    default: {
      int sum = 0;
      for (int value : values) sum += value;
      return sum % 10;
    }
  }
}

// Recursive descent over the ids with parentheses removed:
//   expr := digit | operator expr+ "]"
class Evaluator {
 public:
  Evaluator(const std::vector<int32_t>& ids, const std::vector<size_t>& positions) : ids_(ids), positions_(positions) {}

  int run() {
    check(!ids_.empty(), "listops: expression has no digit or operator");
    int value = expression(0);
    if (next_ < ids_.size()) fail("listops: token ", positions_[next_] + 1, ": more after the complete expression");
    return value;
  }

 private:
  static constexpr int kMaxNesting = 4096;

  int expression(int nesting) {
    check(nesting < kMaxNesting, "listops: operators nested deeper than ", kMaxNesting);
    if (next_ >= ids_.size()) fail("listops: expression ends inside an operator (missing ']')");
    const size_t position = positions_[next_];
    const int32_t id = ids_[next_++];
    if (id >= kFirstDigit && id < kFirstDigit + 10) return id - kFirstDigit;
    check(id >= kMax && id <= kSumMod, "listops: token ", position + 1, ": ']' without an operator");
    std::vector<int> arguments;
    while (next_ < ids_.size() && ids_[next_] != kClose) arguments.push_back(expression(nesting + 1));
    check(next_ < ids_.size(), "listops: token ", position + 1, ": operator ", kOperatorNames[id - kMax],
          " is never closed with ']'");
    check(!arguments.empty(), "listops: token ", position + 1, ": operator ", kOperatorNames[id - kMax],
          " has no arguments");
    ++next_;  // the ']'
    return apply_operator(id, arguments);
  }

  const std::vector<int32_t>& ids_;
  const std::vector<size_t>& positions_;
  size_t next_ = 0;
};

// Appends one random subtree (see generate_listops_expression); returns false
// as soon as the text holds more than max_tokens tokens.
bool generate_tree(Generator& generator, int depth, int max_depth, int max_args, int64_t max_tokens,
                   std::string& text, int64_t& tokens) {
  constexpr double kOperatorProbability = 0.25;  // LRA's VALUE_P
  const bool is_operator = depth < max_depth && generator.uniform() < kOperatorProbability;
  if (!text.empty()) text += ' ';
  if (!is_operator) {
    text += static_cast<char>('0' + generator.next_u64() % 10);
    return ++tokens <= max_tokens;
  }
  const auto op = static_cast<size_t>(generator.next_u64() % 4);
  const int arguments = 2 + static_cast<int>(generator.next_u64() % static_cast<uint64_t>(max_args - 1));
  text += "( ";
  text += kOperatorNames[op];
  tokens += 2;
  for (int a = 0; a < arguments; ++a)
    if (!generate_tree(generator, depth + 1, max_depth, max_args, max_tokens, text, tokens)) return false;
  text += " ] )";
  tokens += 2;
  return tokens <= max_tokens;
}

void check_generator_limits(int max_depth, int max_args) {
  check(max_depth >= 1 && max_depth <= 1000, "listops: max_depth ", max_depth, " outside [1, 1000]");
  check(max_args >= 2 && max_args <= 1000, "listops: max_args ", max_args, " outside [2, 1000]");
}

}  // namespace

int32_t listops_token_id(std::string_view token) {
  if (token.size() == 1 && token[0] >= '0' && token[0] <= '9') return kFirstDigit + (token[0] - '0');
  for (int32_t op = 0; op < 4; ++op)
    if (token == kOperatorNames[op]) return kMax + op;
  if (token == "]") return kClose;
  if (token == "(") return kOpenParen;
  if (token == ")") return kCloseParen;
  return -1;
}

namespace {

// The value of an expression given as tokens; throws "listops: token N: ..."
// on anything but an expression of the grammar (unknown tokens, unbalanced
// or empty parentheses, an operator without arguments or ']', more after
// the complete expression).
int evaluate_tokens(const std::vector<std::string_view>& tokens) {
  std::vector<int32_t> ids;                // without parentheses
  std::vector<size_t> positions;           // of each id among all tokens
  std::vector<size_t> ids_at_open_parens;  // ids.size() when each open '(' was read
  for (size_t position = 0; position < tokens.size(); ++position) {
    const int32_t id = listops_token_id(tokens[position]);
    check(id >= 0, "listops: token ", position + 1, ": unknown token '", tokens[position], "'");
    if (id == kOpenParen) {
      ids_at_open_parens.push_back(ids.size());
    } else if (id == kCloseParen) {
      check(!ids_at_open_parens.empty(), "listops: token ", position + 1, ": ')' without '('");
      check(ids_at_open_parens.back() < ids.size(), "listops: token ", position + 1, ": empty parentheses '( )'");
      ids_at_open_parens.pop_back();
    } else {
      ids.push_back(id);
      positions.push_back(position);
    }
  }
  check(ids_at_open_parens.empty(), "listops: ", ids_at_open_parens.size(), " '(' never closed");
  return Evaluator(ids, positions).run();
}

}  // namespace

int evaluate_listops(const std::string& expression) { return evaluate_tokens(split_tokens(expression)); }

Dataset load_listops(const std::string& path, int64_t seq_len) {
  const std::string who = path;
  check(seq_len >= 1 && seq_len <= (int64_t{1} << 24), who, ": seq_len ", seq_len, " outside [1, 2^24]");
  const std::string text = io::read_file_bytes(path, "");
  check(!text.empty(), who, ": empty file (expected the header line 'Source\\tTarget')");

  // Each example needs a line, so the line count bounds the allocation.
  const auto line_count = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  check(line_count * seq_len <= kMaxDatasetTokens, who, ": ", line_count, " lines of ", seq_len,
        " tokens could need more than the limit of ", kMaxDatasetTokens, " tokens");
  Dataset data;
  data.seq_len = seq_len;
  data.vocab = kListOpsVocab;
  data.classes = kListOpsClasses;
  data.pad_id = 0;

  size_t start = 0;
  for (int64_t line_number = 1; start < text.size(); ++line_number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line_number == 1) {
      check(line == kHeader, who, ": line 1: expected the header 'Source\\tTarget'");
      continue;
    }
    check(!line.empty(), who, ": line ", line_number, ": empty line");
    const size_t tab = line.find('\t');
    check(tab != std::string_view::npos, who, ": line ", line_number, ": no tab between expression and label");
    check(line.find('\t', tab + 1) == std::string_view::npos, who, ": line ", line_number, ": more than one tab");
    const std::string_view label = line.substr(tab + 1);
    check(label.size() == 1 && label[0] >= '0' && label[0] <= '9', who, ": line ", line_number, ": label '", label,
          "' is not a digit 0-9");
    const auto tokens = split_tokens(line.substr(0, tab));
    check(!tokens.empty(), who, ": line ", line_number, ": empty expression");
    check(static_cast<int64_t>(tokens.size()) <= seq_len, who, ": line ", line_number, ": expression of ",
          tokens.size(), " tokens is longer than seq_len ", seq_len);
    for (size_t k = 0; k < tokens.size(); ++k) {
      const int32_t id = listops_token_id(tokens[k]);
      check(id >= 0, who, ": line ", line_number, ": unknown token '", tokens[k], "' (token ", k + 1, ")");
      data.tokens.push_back(id);
    }
    try {
      evaluate_tokens(tokens);  // a malformed expression would be trained on as if it meant something
    } catch (const Error& error) {
      fail(who, ": line ", line_number, ": ", std::string_view(error.what()).substr(std::string_view("listops: ").size()));
    }
    data.tokens.resize(data.tokens.size() + static_cast<size_t>(seq_len) - tokens.size(), data.pad_id);
    data.lengths.push_back(static_cast<int32_t>(tokens.size()));
    data.labels.push_back(label[0] - '0');
    ++data.count;
  }
  check(data.count > 0, who, ": no examples after the header");
  return data;
}

std::string generate_listops_expression(Generator& generator, int max_depth, int max_args, int64_t max_tokens) {
  check_generator_limits(max_depth, max_args);
  std::string text;
  int64_t tokens = 0;
  check(generate_tree(generator, 1, max_depth, max_args, max_tokens, text, tokens),
        "generate_listops_expression: expression grew past ", max_tokens, " tokens");
  return text;
}

std::vector<ListOpsExample> generate_listops_examples(Generator& generator, const ListOpsOptions& options) {
  check_generator_limits(options.max_depth, options.max_args);
  check(options.count >= 0, "generate_listops_examples: count ", options.count, " is negative");
  check(options.min_len >= 1 && options.min_len <= options.max_len, "generate_listops_examples: length range [",
        options.min_len, ", ", options.max_len, "] is empty or starts below 1");
  check(options.max_tries >= 1, "generate_listops_examples: max_tries ", options.max_tries, " must be positive");
  std::vector<ListOpsExample> examples;
  examples.reserve(static_cast<size_t>(std::min<int64_t>(options.count, 1 << 20)));
  int64_t shortest = INT64_MAX, longest = 0;  // of finished draws, for the give-up message
  for (int64_t i = 0; i < options.count; ++i) {
    for (int64_t tries = 0;; ++tries) {
      check(tries < options.max_tries, "generate_listops_examples: no expression of ", options.min_len, "..",
            options.max_len, " tokens in ", options.max_tries, " draws (max_depth ", options.max_depth, ", max_args ",
            options.max_args, "; finished draws had ", shortest == INT64_MAX ? 0 : shortest, "..", longest,
            " tokens)");
      std::string text;
      int64_t tokens = 0;
      if (!generate_tree(generator, 1, options.max_depth, options.max_args, options.max_len, text, tokens)) continue;
      shortest = std::min(shortest, tokens);
      longest = std::max(longest, tokens);
      if (tokens < options.min_len) continue;
      const int label = evaluate_listops(text);
      examples.push_back({std::move(text), label, tokens});
      break;
    }
  }
  return examples;
}

std::string listops_tsv(const std::vector<ListOpsExample>& examples) {
  std::string text(kHeader);
  text += '\n';
  for (const ListOpsExample& example : examples) {
    check(example.label >= 0 && example.label <= 9, "label ", example.label, " outside 0-9");
    text += example.expression;
    text += '\t';
    text += static_cast<char>('0' + example.label);
    text += '\n';
  }
  return text;
}

void write_listops_tsv(const std::string& path, const std::vector<ListOpsExample>& examples) {
  io::write_file_atomic(path, listops_tsv(examples), "");
}

ListOpsSummary summarize_listops(const std::vector<ListOpsExample>& examples) {
  ListOpsSummary summary;
  summary.count = static_cast<int64_t>(examples.size());
  if (examples.empty()) return summary;
  summary.min_length = INT64_MAX;
  double total = 0.0;
  for (const ListOpsExample& example : examples) {
    summary.min_length = std::min(summary.min_length, example.length);
    summary.max_length = std::max(summary.max_length, example.length);
    total += static_cast<double>(example.length);
    if (example.label >= 0 && example.label <= 9) ++summary.label_counts[static_cast<size_t>(example.label)];
  }
  summary.mean_length = total / static_cast<double>(summary.count);
  return summary;
}

}  // namespace hkt::data
