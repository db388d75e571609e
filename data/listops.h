#pragma once
// ListOps (SPEC section 6): nested list operations over the digits 0-9 in the
// Long Range Arena TSV layout, a header line "Source\tTarget", then one
// expression and its answer a line:
//     ( [MAX 2 9 ( [MIN 4 7 ] ) 0 ] )\t9
// Operators: MAX, MIN, MED (the median; for an even count the mean of the two
// middle values, truncated), SM (sum mod 10). Tokens are separated by spaces.
// Parentheses carry no meaning (they only have to balance), so the reader
// and evaluator also take LRA's own binary nesting, "( ( [MAX 2 ) 9 ] )".
//
// Fixed vocabulary (18 ids): pad 0, digits 0-9 → 1..10, [MAX [MIN [MED [SM →
// 11..14, ] → 15, ( → 16, ) → 17. Classes: the 10 answers.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/dataset.h"
#include "engine/random.h"

namespace hkt::data {

inline constexpr int64_t kListOpsVocab = 18;
inline constexpr int64_t kListOpsClasses = 10;

// The id of one token, or −1 for a token outside the vocabulary.
int32_t listops_token_id(std::string_view token);

// Reads a ListOps TSV into [count, seq_len] tokens. An expression longer than
// seq_len is an error (no silent truncation); so are a missing header, an
// empty file, an unknown token, a bad label and a missing tab: every message
// names the file and the line.
Dataset load_listops(const std::string& path, int64_t seq_len);

// The value of an expression (0-9). Throws hkt::Error on a malformed one
// (unknown token, unbalanced brackets or parentheses, an operator with no
// arguments, more than one top-level value), naming the token position.
int evaluate_listops(const std::string& expression);

// One random expression, generated as in LRA: a node at depth d < max_depth
// (the root has depth 1) is an operator with probability 1/4 (LRA's VALUE_P),
// with a uniform operator and 2..max_args arguments, else a uniform digit; at
// max_depth it is a digit. Operator nodes print as "( [OP a b ... ] )".
// Throws if the expression would exceed max_tokens tokens.
std::string generate_listops_expression(Generator& generator, int max_depth, int max_args,
                                        int64_t max_tokens = int64_t{1} << 22);

struct ListOpsExample {
  std::string expression;
  int label = 0;
  int64_t length = 0;  // tokens, parentheses included
};

struct ListOpsOptions {
  int64_t count = 0;
  int64_t min_len = 1, max_len = 512;  // token lengths, both ends included
  int max_depth = 10, max_args = 10;
  int64_t max_tries = 1'000'000;       // per example, before giving up with an error
};

// `count` expressions whose token lengths lie in [min_len, max_len], drawn by
// rejection (a draw is abandoned as soon as it grows past max_len), labelled
// by evaluate_listops.
std::vector<ListOpsExample> generate_listops_examples(Generator& generator, const ListOpsOptions& options);

// The LRA TSV text of the examples, and the file, written atomically
// (temporary file, then rename).
std::string listops_tsv(const std::vector<ListOpsExample>& examples);
void write_listops_tsv(const std::string& path, const std::vector<ListOpsExample>& examples);

struct ListOpsSummary {
  int64_t count = 0, min_length = 0, max_length = 0;
  double mean_length = 0.0;
  std::array<int64_t, 10> label_counts{};
};
ListOpsSummary summarize_listops(const std::vector<ListOpsExample>& examples);

}  // namespace hkt::data
