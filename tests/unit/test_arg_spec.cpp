// arg_spec tokens as written (lib/scan/arg_spec): aliases, explicit types,
// splitting, the whole-spec rules and the "did you mean" suggestions.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "scan/arg_spec.hpp"

using namespace bekc;

namespace {

// The canonical form of one token, or "error@column: message | fix".
std::string parse(const std::string& text, int column = 5) {
    TokenError e;
    auto p = parse_token({text, column}, e);
    if (!p) return "error@" + std::to_string(e.column) + ": " + e.message + " | " + e.fix;
    return p->token.canonical() + (p->type_given ? "" : " (bare)");
}

std::vector<ParsedToken> parsed(const std::vector<std::string>& texts) {
    std::vector<ParsedToken> out;
    int column = 1;
    for (const auto& t : texts) {
        TokenError e;
        out.push_back(*parse_token({t, column}, e));
        column += static_cast<int>(t.size()) + 1;
    }
    return out;
}

std::string rules(const std::vector<std::string>& texts, bool cuda = true) {
    auto e = check_spec_rules(parsed(texts), cuda);
    return e ? std::to_string(e->column) + ": " + e->message : "ok";
}

}  // namespace

TEST_CASE("arg_spec: every alias normalises to its canonical token", "[arg_spec]") {
    CHECK(parse("arg") == "arg");
    CHECK(parse("args") == "arg");
    CHECK(parse("ret") == "ret");
    CHECK(parse("rets") == "ret");
    CHECK(parse("stream") == "stream");
    CHECK(parse("ctx.stream") == "stream");
    CHECK(parse("attr.alpha:float32") == "attr.alpha:float32");
    CHECK(parse("attrs.alpha:float32") == "attr.alpha:float32");
    CHECK(parse("attr.alpha") == "attr.alpha:int32 (bare)");
    CHECK(parse("attrs.alpha") == "attr.alpha:int32 (bare)");
}

TEST_CASE("arg_spec: every attribute type, explicit", "[arg_spec]") {
    for (const auto& row : attr_types()) {
        std::string name(row.name);
        INFO(name);
        CHECK(parse("attr.x:" + name) == "attr.x:" + name);
        CHECK(parse("attrs.x:" + name) == "attr.x:" + name);
    }
    CHECK(attr_type_list() ==
          "bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
          "float32, float64, float16, bfloat16");
    // float16 and bfloat16 arrive as raw bits.
    CHECK(attr_type_info(AttrType::Float16).cxx_type == "uint16_t");
    CHECK(attr_type_info(AttrType::BFloat16).cxx_type == "uint16_t");
}

TEST_CASE("arg_spec: bad tokens, with the column of the mistake", "[arg_spec]") {
    CHECK(parse("Arg") ==
          "error@5: unknown arg_spec token 'Arg' | did you mean 'arg'? tokens are 'arg', 'ret', "
          "'stream' and 'attr.<name>' or 'attr.<name>:<type>' (aliases: 'args', 'rets', "
          "'ctx.stream', 'attrs.<name>')");
    CHECK(parse("attr.:int32") ==
          "error@10: attribute name '' in 'attr.:int32' is not an ASCII C++ identifier | "
          "attribute names are emitted into generated C++: use ASCII letters, digits and '_', "
          "not starting with a digit, and not a C++ keyword");
    CHECK(parse("attr.1x:int32")
              .rfind("error@10: attribute name '1x' in 'attr.1x:int32' is not "
                     "an ASCII C++ identifier",
                     0) == 0);
    CHECK(parse("attrs.x:half") ==
          "error@13: unknown attribute type 'half' in 'attrs.x:half' | did you mean "
          "'attr.x:float16'? attribute types are: bool, int8, uint8, int16, uint16, int32, "
          "uint32, int64, uint64, float32, float64, float16, bfloat16");
    CHECK(parse("attr.x:").rfind("error@12: unknown attribute type '' in 'attr.x:'", 0) == 0);
    CHECK(parse("attr.x:float32:1").rfind("error@12: unknown attribute type 'float32:1'", 0) == 0);
}

TEST_CASE("arg_spec: suggestions for attribute types", "[arg_spec]") {
    // Spellings from C++ and from other frameworks.
    CHECK(suggest_attr_type("float") == "float32");
    CHECK(suggest_attr_type("double") == "float64");
    CHECK(suggest_attr_type("half") == "float16");
    CHECK(suggest_attr_type("bf16") == "bfloat16");
    CHECK(suggest_attr_type("int") == "int32");
    CHECK(suggest_attr_type("int64_t") == "int64");
    CHECK(suggest_attr_type("uint") == "uint32");
    // Typos.
    CHECK(suggest_attr_type("flaot32") == "float32");
    CHECK(suggest_attr_type("unit8") == "uint8");
    CHECK(suggest_attr_type("bfloat61") == "bfloat16");
    CHECK(suggest_attr_type("boool") == "bool");
    // Nothing close.
    CHECK_FALSE(suggest_attr_type("string").has_value());
    CHECK_FALSE(suggest_attr_type("").has_value());
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("same", "same") == 0);
}

TEST_CASE("arg_spec: splitting an annotation's text", "[arg_spec]") {
    auto t = split_tokens(" arg,ret\t, attr.x:int32,,stream ", 10);
    REQUIRE(t.size() == 4);
    CHECK(t[0].text == "arg");
    CHECK(t[0].column == 11);
    CHECK(t[1].text == "ret");
    CHECK(t[1].column == 15);
    CHECK(t[2].text == "attr.x:int32");
    CHECK(t[2].column == 21);
    CHECK(t[3].text == "stream");
    CHECK(split_tokens("", 1).empty());
    CHECK(split_tokens(" , \t", 1).empty());
    // A backslash before a newline continues the line; elsewhere it is text.
    t = split_tokens("arg \\\n ret \\\r\n stream a\\b", 1);
    REQUIRE(t.size() == 4);
    CHECK(t[1].text == "ret");
    CHECK(t[2].text == "stream");
    CHECK(t[3].text == "a\\b");
}

TEST_CASE("arg_spec: rules over a whole spec", "[arg_spec]") {
    CHECK(rules({"arg", "ret"}) == "ok");
    CHECK(rules({"arg", "ret", "ret", "stream"}) == "ok");
    CHECK(rules({"arg", "arg"}) == "0: no 'ret' token: a function must have at least one output");
    CHECK(rules({}) == "0: no 'ret' token: a function must have at least one output");
    CHECK(rules({"ret", "stream", "stream"}) == "12: more than one 'stream' token");
    CHECK(rules({"ret", "stream"}, /*cuda=*/false) == "5: 'stream' in a CPU (.cpp) build");
    CHECK(rules({"ret", "attr.a:int32", "attrs.b:int32", "attr.a:float32"}) ==
          "32: attribute 'a' is listed twice");
    // The first violation in token order wins.
    CHECK(rules({"stream", "stream"}) == "8: more than one 'stream' token");
}
