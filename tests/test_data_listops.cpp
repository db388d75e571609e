#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include <sys/wait.h>

#include <catch2/catch.hpp>

#include "data/listops.h"
#include "tests/data_test_util.h"

using namespace hkt;
using namespace hkt::data;
using Catch::Contains;
using hkt::testing::TempDir;

namespace {

// An independent evaluator: a stack machine over the raw tokens, as LRA's own
// reference evaluates. Operators push a marker; "]" pops values down to the
// nearest marker and pushes the result. Parentheses are skipped.
int stack_machine(const std::string& expression) {
  constexpr int kMarker = -1;
  std::vector<int> stack;           // values and markers
  std::vector<std::string> pending; // operator names, innermost last
  std::istringstream in(expression);
  std::string token;
  while (in >> token) {
    if (token == "(" || token == ")") continue;
    if (token.size() == 1 && std::isdigit(static_cast<unsigned char>(token[0]))) {
      stack.push_back(token[0] - '0');
    } else if (token == "]") {
      std::vector<int> values;
      while (stack.back() != kMarker) {
        values.push_back(stack.back());
        stack.pop_back();
      }
      stack.pop_back();
      const std::string op = pending.back();
      pending.pop_back();
      std::sort(values.begin(), values.end());
      int result = 0;
      if (op == "[MAX") result = values.back();
      if (op == "[MIN") result = values.front();
      if (op == "[SM") {
        for (int value : values) result += value;
        result %= 10;
      }
      if (op == "[MED") {
        const size_t n = values.size();
        result = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
      }
      stack.push_back(result);
    } else {
      stack.push_back(kMarker);
      pending.push_back(token);
    }
  }
  REQUIRE(stack.size() == 1);
  return stack.back();
}

int64_t token_count(const std::string& expression) {
  std::istringstream in(expression);
  std::string token;
  int64_t count = 0;
  while (in >> token) ++count;
  return count;
}

const std::string kHeaderLine = "Source\tTarget\n";

}  // namespace

TEST_CASE("evaluate_listops: hand-written expressions") {
  CHECK(evaluate_listops("( [MAX 2 9 ( [MIN 4 7 ] ) 0 ] )") == 9);
  CHECK(evaluate_listops("( [MIN 4 ( [SM 5 6 ] ) ] )") == 1);
  CHECK(evaluate_listops("( [SM 9 8 7 ] )") == 4);
  CHECK(evaluate_listops("( [SM 0 0 ] )") == 0);
  CHECK(evaluate_listops("( [MED 7 1 5 ] )") == 5);     // odd count: the middle value
  CHECK(evaluate_listops("( [MED 1 2 3 4 ] )") == 2);   // even: (2 + 3) / 2 truncated
  CHECK(evaluate_listops("( [MED 8 3 ] )") == 5);       // (3 + 8) / 2 = 5.5 → 5
  CHECK(evaluate_listops("( [MED 9 9 0 0 ] )") == 4);   // (0 + 9) / 2 = 4.5 → 4
  CHECK(evaluate_listops("( [MAX ( [MED 2 6 ] ) ( [SM 5 5 1 ] ) ] )") == 4);
  CHECK(evaluate_listops("7") == 7);
  CHECK(evaluate_listops("[MED 0 9 ]") == 4);                  // parentheses are optional
  CHECK(evaluate_listops("( ( ( ( [MAX 2 ) 9 ) 0 ) ] )") == 9);  // LRA's binary nesting
  CHECK(evaluate_listops("  ( [MIN  3   8 ] )  ") == 3);          // runs of spaces
}

TEST_CASE("evaluate_listops: malformed expressions are errors naming the token") {
  REQUIRE_THROWS_WITH(evaluate_listops(""), Contains("no digit or operator"));
  REQUIRE_THROWS_WITH(evaluate_listops("( [FOO 1 2 ] )"), Contains("token 2: unknown token '[FOO'"));
  REQUIRE_THROWS_WITH(evaluate_listops("( [MAX 1 12 ] )"), Contains("token 4: unknown token '12'"));
  REQUIRE_THROWS_WITH(evaluate_listops("( [MAX 2 9 )"), Contains("operator [MAX is never closed"));
  REQUIRE_THROWS_WITH(evaluate_listops("( [MIN ] )"), Contains("token 2: operator [MIN has no arguments"));
  REQUIRE_THROWS_WITH(evaluate_listops("( [MAX 1 2 ]"), Contains("1 '(' never closed"));
  REQUIRE_THROWS_WITH(evaluate_listops("[MAX 1 2 ] )"), Contains("token 5: ')' without '('"));
  REQUIRE_THROWS_WITH(evaluate_listops("1 2"), Contains("token 2: more after the complete expression"));
  REQUIRE_THROWS_WITH(evaluate_listops("( [SM 1 ] ] )"), Contains("token 5: more after the complete expression"));
  REQUIRE_THROWS_WITH(evaluate_listops("] 1"), Contains("token 1: ']' without an operator"));
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "[MAX ";
  REQUIRE_THROWS_WITH(evaluate_listops(deep + "1"), Contains("nested deeper than 4096"));
}

TEST_CASE("evaluate_listops agrees with an independent stack machine on generated expressions") {
  Generator generator(2024);
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string expression = generate_listops_expression(generator, 6, 5);
    INFO(expression);
    REQUIRE(evaluate_listops(expression) == stack_machine(expression));
    ++checked;
  }
  ListOpsOptions options;  // LRA's defaults: depth 10, up to 10 arguments
  options.count = 1000;
  options.min_len = 1;
  options.max_len = 2000;
  for (const ListOpsExample& example : generate_listops_examples(generator, options)) {
    INFO(example.expression);
    REQUIRE(example.label == stack_machine(example.expression));
    REQUIRE(example.length == token_count(example.expression));
    ++checked;
  }
  CHECK(checked == 3000);
}

TEST_CASE("generate_listops_expression: seeded, depth-limited, within the token budget") {
  Generator a(7), b(7);
  for (int i = 0; i < 50; ++i) CHECK(generate_listops_expression(a, 10, 10, 100000) ==
                                     generate_listops_expression(b, 10, 10, 100000));
  Generator generator(3);
  for (int i = 0; i < 200; ++i) {
    // Depth 1 allows no operator; depth 2 one level of them.
    CHECK(token_count(generate_listops_expression(generator, 1, 10)) == 1);
    const std::string flat = generate_listops_expression(generator, 2, 4);
    CHECK(std::count(flat.begin(), flat.end(), '[') <= 1);
    CHECK(token_count(flat) <= 4 + 4);
  }
  REQUIRE_THROWS_WITH(generate_listops_expression(generator, 0, 10), Contains("max_depth 0 outside [1, 1000]"));
  REQUIRE_THROWS_WITH(generate_listops_expression(generator, 5, 1), Contains("max_args 1 outside [2, 1000]"));
}

TEST_CASE("generate_listops_examples: lengths in range, labels spread over the classes") {
  Generator generator(11);
  ListOpsOptions options;
  options.count = 2000;
  options.min_len = 50;
  options.max_len = 300;
  const auto examples = generate_listops_examples(generator, options);
  REQUIRE(examples.size() == 2000);
  for (const ListOpsExample& example : examples) {
    REQUIRE(example.length >= 50);
    REQUIRE(example.length <= 300);
  }
  const ListOpsSummary summary = summarize_listops(examples);
  CHECK(summary.count == 2000);
  CHECK(summary.min_length >= 50);
  CHECK(summary.max_length <= 300);
  CHECK(summary.mean_length > 50);
  for (int64_t labels : summary.label_counts) {
    CHECK(labels > 2000 / 40);  // every class occurs
    CHECK(labels < 2000 * 3 / 10);  // none dominates (uniform would be 10 %)
  }

  options.min_len = 1000;
  options.max_len = 1001;
  options.max_depth = 2;
  options.max_args = 3;
  options.max_tries = 500;  // depth 2 cannot exceed 7 tokens
  REQUIRE_THROWS_WITH(generate_listops_examples(generator, options),
                      Contains("no expression of 1000..1001 tokens in 500 draws"));
  options.min_len = 10;
  options.max_len = 9;
  REQUIRE_THROWS_WITH(generate_listops_examples(generator, options), Contains("length range [10, 9] is empty"));
}

TEST_CASE("load_listops reads the LRA TSV into padded token ids") {
  TempDir dir;
  const std::string path = dir.write("small.tsv", kHeaderLine +
                                                      "( [MAX 2 9 ( [MIN 4 7 ] ) 0 ] )\t9\n"
                                                      "( [SM 3 4 ] )\t7\r\n"  // a CRLF line
                                                      "5\t5\n");
  const Dataset data = load_listops(path, 13);
  REQUIRE(data.count == 3);
  CHECK(data.seq_len == 13);
  CHECK(data.vocab == 18);
  CHECK(data.classes == 10);
  CHECK(data.pad_id == 0);
  CHECK(data.lengths == std::vector<int32_t>{13, 6, 1});
  CHECK(data.labels == std::vector<int32_t>{9, 7, 5});
  // ( → 16, [MAX → 11, digit d → d + 1, [MIN → 12, ] → 15, ) → 17, [SM → 14, pad 0.
  const std::vector<int32_t> expected = {16, 11, 3, 10, 16, 12, 5, 8, 15, 17, 1, 15, 17,  //
                                         16, 14, 4, 5, 15, 17, 0, 0, 0, 0, 0, 0, 0,        //
                                         6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  REQUIRE_THROWS_WITH(load_listops(path, 12), Contains("line 2: expression of 13 tokens is longer than seq_len 12"));
  CHECK(data.tokens == expected);
  CHECK(listops_token_id("[MED") == 13);
  CHECK(listops_token_id("[FIRST") == -1);
  validate(data);
}

TEST_CASE("load_listops round-trips generated files") {
  TempDir dir;
  Generator generator(5);
  ListOpsOptions options;
  options.count = 200;
  options.min_len = 10;
  options.max_len = 120;
  const auto examples = generate_listops_examples(generator, options);
  const std::string path = (dir.path() / "gen.tsv").string();
  write_listops_tsv(path, examples);
  const Dataset data = load_listops(path, 120);
  REQUIRE(data.count == 200);
  validate(data);
  for (size_t i = 0; i < examples.size(); ++i) {
    CHECK(data.labels[i] == examples[i].label);
    CHECK(data.lengths[i] == examples[i].length);
    std::istringstream in(examples[i].expression);
    std::string token;
    for (size_t t = 0; in >> token; ++t) REQUIRE(data.tokens[i * 120 + t] == listops_token_id(token));
  }
  // No temporary file is left beside the output.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("load_listops: malformed files are errors naming the file and the line") {
  TempDir dir;
  auto load = [&](const std::string& content, int64_t seq_len = 16) {
    return load_listops(dir.write("bad.tsv", content), seq_len);
  };
  REQUIRE_THROWS_WITH(load(""), Contains("bad.tsv: empty file"));
  REQUIRE_THROWS_WITH(load("( [MAX 1 2 ] )\t2\n"), Contains("bad.tsv: line 1: expected the header"));
  REQUIRE_THROWS_WITH(load("Source Target\n1\t1\n"), Contains("line 1: expected the header"));
  REQUIRE_THROWS_WITH(load(kHeaderLine), Contains("no examples after the header"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "1\t1\n( [MAX 1 2 ] ) 2\n"), Contains("line 3: no tab"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "1\t1\t1\n"), Contains("line 2: more than one tab"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "( [MAX 1 2 ] )\t10\n"), Contains("line 2: label '10' is not a digit"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "( [MAX 1 2 ] )\tx\n"), Contains("line 2: label 'x' is not a digit"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "( [MAX 1 2 ] )\t\n"), Contains("line 2: label '' is not a digit"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "1\t1\n2\t2\n( [FOO 1 2 ] )\t2\n"),
                      Contains("line 4: unknown token '[FOO' (token 2)"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "1\t1\n\n2\t2\n"), Contains("line 3: empty line"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + " \t3\n"), Contains("line 2: empty expression"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "3\t3\n( [MAX 2 9 0 ] )\t9\n", 5),
                      Contains("line 3: expression of 7 tokens is longer than seq_len 5"));
  REQUIRE_THROWS_WITH(load(kHeaderLine + "1\t1\n", 0), Contains("seq_len 0 outside"));
  REQUIRE_THROWS_WITH(load_listops((dir.path() / "missing.tsv").string(), 8), Contains("missing.tsv: no such file"));
  CHECK(load(kHeaderLine + "1\t1").count == 1);  // no final newline is fine
}

TEST_CASE("listops-gen: flags, exit codes and a loadable file") {
  if (!std::filesystem::exists("listops-gen")) {
    WARN("skipped: ./listops-gen not found (run the test from the build folder)");
    return;
  }
  TempDir dir;
  const std::string out = (dir.path() / "lo.tsv").string();
  auto run = [](const std::string& args) {
    const int status = std::system(("./listops-gen " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  CHECK(run("--seed 1 --count 20 --min-len 5 --max-len 50 --bogus 2 --out " + out) == 2);
  CHECK(run("--seed 1 --count 20 --min-len 5 --max-len 50") == 2);  // no --out
  CHECK(run("--seed 1 --count -3 --min-len 5 --max-len 50 --out " + out) == 2);
  CHECK(run("--seed 1 --count 20 --min-len 50 --max-len 5 --out " + out) == 2);
  CHECK(run("--seed 1 --count 20 --min-len 5 --max-len 50 --max-args 1 --out " + out) == 2);
  CHECK_FALSE(std::filesystem::exists(out));
  REQUIRE(run("--seed 1 --count 20 --min-len 5 --max-len 50 --max-depth 6 --out " + out) == 0);
  const Dataset data = load_listops(out, 50);
  CHECK(data.count == 20);
  for (int32_t length : data.lengths) CHECK((length >= 5 && length <= 50));
}

TEST_CASE("load_listops: structurally malformed expressions are errors naming the line and the token") {
  hkt::testing::TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"( [MAX 1 2 ]", "line 2: 1 '(' never closed"},
      {"[MAX 1 2 ] )", "line 2: token 5: ')' without '('"},
      {"( )", "line 2: token 2: empty parentheses '( )'"},
      {"[MAX ( ) 1 ]", "line 2: token 3: empty parentheses '( )'"},
      {"[MAX ]", "line 2: token 1: operator [MAX has no arguments"},
      {"1 2", "line 2: token 2: more after the complete expression"},
      {"[MIN 3 4", "line 2: token 1: operator [MIN is never closed with ']'"},
      {"]", "line 2: token 1: ']' without an operator"},
  };
  for (auto [expression, message] : cases) {
    INFO(expression);
    const std::string path = dir.write("bad.tsv", std::string("Source\tTarget\n[SM 1 2 ]\t3\n") + expression + "\t1\n");
    // The bad expression is on line 3 (line 2 is a good one).
    std::string expected = message;
    expected.replace(expected.find("line 2"), 6, "line 3");
    REQUIRE_THROWS_WITH(load_listops(path, 16), Catch::Contains(path + ": " + expected));
  }
  // LRA's parenthesised form still loads.
  const std::string good = dir.write("good.tsv", "Source\tTarget\n( ( [MAX 2 ) 9 ] )\t9\n");
  CHECK(load_listops(good, 16).count == 1);
}
