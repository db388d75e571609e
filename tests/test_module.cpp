#include "tests/gradcheck.h"

using namespace hkt;

namespace {

struct Leaf : Module {
  Parameter weight, bias;
  Leaf() {
    weight = register_parameter("weight", Tensor::ones({2, 3}));
    bias = register_parameter("bias", Tensor::zeros({2}));
  }
};

struct Tree : Module {
  std::shared_ptr<Leaf> first, second;
  Parameter scale;
  Tree() {
    scale = register_parameter("scale", Tensor::ones({1}));
    first = register_module("blocks0", std::make_shared<Leaf>());
    second = register_module("head", std::make_shared<Leaf>());
  }
};

}  // namespace

TEST_CASE("named_parameters walks the tree with dotted names in registration order") {
  Tree tree;
  std::vector<std::string> names;
  for (auto& [name, value] : tree.named_parameters()) {
    names.push_back(name);
    CHECK(value.requires_grad());
    CHECK(value.is_leaf());
  }
  CHECK(names == std::vector<std::string>{"scale", "blocks0.weight", "blocks0.bias", "head.weight", "head.bias"});
  CHECK(tree.parameter_count() == 1 + 2 * (6 + 2));
  CHECK(tree.parameter("head.bias").raw_data() == tree.second->bias.raw_data());
  REQUIRE_THROWS_WITH(tree.parameter("head.gamma"), "Module: no parameter named 'head.gamma'");
}

TEST_CASE("registering a bad or repeated name is an error") {
  Leaf leaf;
  REQUIRE_THROWS_WITH(leaf.register_parameter("weight", Tensor::ones({1})), "Module: name 'weight' registered twice");
  REQUIRE_THROWS_WITH(leaf.register_parameter("a.b", Tensor::ones({1})),
                      "Module: invalid name 'a.b' (names are non-empty and hold no '.')");
}

TEST_CASE("zero_grad, train/eval and to(dtype) reach every parameter") {
  Tree tree;
  sum(mul(tree.first->weight, 2.0)).backward();
  CHECK(tree.first->weight.grad().defined());
  tree.zero_grad();
  for (auto& p : tree.parameters()) CHECK_FALSE(p.grad().defined());
  tree.eval();
  CHECK_FALSE(tree.second->is_training());
  tree.train();
  CHECK(tree.second->is_training());
  Tensor held = tree.parameter("head.weight");
  tree.to(DType::Float64);
  CHECK(held.dtype() == DType::Float64);  // handles held elsewhere see the conversion
  CHECK(held.to_vector<double>() == std::vector<double>(6, 1.0));
  CHECK(held.requires_grad());
}
