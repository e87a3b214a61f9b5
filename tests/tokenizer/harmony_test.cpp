// Harmony rendering (expected strings per the openai/harmony format notes) and the streaming
// parser of the model's output.
#include <gtest/gtest.h>

#include "runtime/harmony/harmony_messages.h"
#include "runtime/harmony/harmony_parser.h"
#include "tests/test_support.h"
#include "tests/tokenizer/tokenizer_fixture.h"

namespace gptoss::harmony {
namespace {

SystemContent system_high() {
  SystemContent s;
  s.reasoning_effort = ReasoningEffort::High;
  s.conversation_start_date = "2025-06-28";
  return s;
}

const char* const kSystemHigh =
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: high\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>";

TEST(HarmonyRender, SystemMessage) {
  EXPECT_EQ(render_conversation({Message::system(system_high())}), kSystemHigh);
  SystemContent low = system_high();
  low.reasoning_effort = ReasoningEffort::Low;
  low.conversation_start_date.reset();
  EXPECT_EQ(render_system_content(low, false),
            "You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n\nReasoning: low\n\n"
            "# Valid channels: analysis, commentary, final. Channel must be included for every message.");
}

TEST(HarmonyRender, TypicalConversationForCompletion) {
  DeveloperContent dev;
  dev.instructions = "Answer briefly.";
  const std::vector<Message> conversation{
      Message::system(system_high()), Message::developer(dev), Message::user("What is 2 + 2?"),
      Message::assistant("User asks: \"What is 2 + 2?\" Simple arithmetic.", "analysis"),
      Message::assistant("2 + 2 = 4."), Message::user("What about 9 / 2?")};
  // The analysis before the final answer is dropped: the last assistant message is final.
  EXPECT_EQ(render_conversation_for_completion(conversation),
            std::string(kSystemHigh) +
                "<|start|>developer<|message|># Instructions\n\nAnswer briefly.<|end|>"
                "<|start|>user<|message|>What is 2 + 2?<|end|>"
                "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|end|>"
                "<|start|>user<|message|>What about 9 / 2?<|end|>"
                "<|start|>assistant");
  RenderOptions keep;
  keep.auto_drop_analysis = false;
  EXPECT_NE(render_conversation(conversation, keep).find("<|channel|>analysis<|message|>User asks"), std::string::npos);
}

TEST(HarmonyRender, FunctionToolsCallsAndResults) {
  DeveloperContent dev;
  dev.instructions = "Use a friendly tone.";
  ToolNamespace functions{"functions", std::nullopt, {}};
  functions.tools.push_back({"get_location", "Gets the location of the user.", std::nullopt});
  functions.tools.push_back({"get_current_weather", "Gets the current weather in the provided location.",
                             nlohmann::ordered_json::parse(R"({"type":"object","properties":{
                               "location":{"type":"string","description":"The city and state, e.g. San Francisco, CA"},
                               "format":{"type":"string","enum":["celsius","fahrenheit"],"default":"celsius"}},
                               "required":["location"]})")});
  dev.tools.push_back(functions);
  const std::vector<Message> conversation{
      Message::system(system_high()), Message::developer(dev), Message::user("What is the weather like in SF?"),
      Message::assistant("Need to use function get_current_weather.", "analysis"),
      Message::tool_call("functions.get_current_weather", "{\"location\":\"San Francisco\"}"),
      Message::tool_result("functions.get_current_weather", "{\"sunny\": true, \"temperature\": 20}")};
  const std::string expected =
      "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
      "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: high\n\n"
      "# Valid channels: analysis, commentary, final. Channel must be included for every message.\n"
      "Calls to these tools must go to the commentary channel: 'functions'.<|end|>"
      "<|start|>developer<|message|># Instructions\n\nUse a friendly tone.\n\n# Tools\n\n## functions\n\n"
      "namespace functions {\n\n// Gets the location of the user.\ntype get_location = () => any;\n\n"
      "// Gets the current weather in the provided location.\ntype get_current_weather = (_: {\n"
      "// The city and state, e.g. San Francisco, CA\nlocation: string,\n"
      "format?: \"celsius\" | \"fahrenheit\", // default: celsius\n}) => any;\n\n} // namespace functions<|end|>"
      "<|start|>user<|message|>What is the weather like in SF?<|end|>"
      "<|start|>assistant<|channel|>analysis<|message|>Need to use function get_current_weather.<|end|>"
      "<|start|>assistant to=functions.get_current_weather<|channel|>commentary <|constrain|>json<|message|>"
      "{\"location\":\"San Francisco\"}<|call|>"
      "<|start|>functions.get_current_weather to=assistant<|channel|>commentary<|message|>"
      "{\"sunny\": true, \"temperature\": 20}<|end|>"
      "<|start|>assistant";
  EXPECT_EQ(render_conversation_for_completion(conversation), expected);
}

TEST(HarmonyRender, GoldenHarmonyPromptTokens) {
  GOLDENS_OR_SKIP();
  REAL_TOKENIZER_OR_SKIP();
  const auto golden = test::refs_a()["prompts"]["harmony"].get<std::vector<uint32_t>>();
  const std::vector<Message> conversation{Message::user("What is 2+2?")};
  EXPECT_EQ(render_conversation_for_completion_tokens(*tokenizer, conversation), golden);
  EXPECT_EQ(tokenizer->decode_text(golden), render_conversation_for_completion(conversation));
}

TEST(HarmonyRender, TokensEqualTheTextEncodedWithSpecials) {
  REAL_TOKENIZER_OR_SKIP();
  const std::vector<Message> conversation{Message::system(system_high()), Message::user("Hi there"),
                                          Message::assistant("Hello!"), Message::user("Bye")};
  EXPECT_EQ(render_conversation_for_completion_tokens(*tokenizer, conversation),
            tokenizer->encode(render_conversation_for_completion(conversation), true));
  // A special token typed by the user stays text.
  const auto ids = render_conversation_tokens(*tokenizer, {Message::user("<|end|>")});
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 200007u), 1);
}

std::vector<uint32_t> ids(const Tokenizer& t, const std::string& text) { return t.encode(text, true); }

TEST(HarmonyParser, AnalysisThenFinalWithReturn) {
  REAL_TOKENIZER_OR_SKIP();
  StreamParser parser(*tokenizer);
  std::string final_text, analysis_text;
  bool stopped = false;
  for (uint32_t id : ids(*tokenizer,
                         "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>"
                         "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>")) {
    const auto update = parser.push(id);
    if (update.channel == "final") final_text += update.content_delta;
    if (update.channel == "analysis") analysis_text += update.content_delta;
    stopped = stopped || update.stopped;
  }
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(parser.stopped());
  EXPECT_EQ(final_text, "2 + 2 = 4.");
  EXPECT_EQ(analysis_text, "User asks 2+2. Easy.");
  ASSERT_EQ(parser.messages().size(), 2u);
  EXPECT_EQ(parser.messages()[0].channel, "analysis");
  EXPECT_EQ(parser.messages()[0].ended_by, "<|end|>");
  EXPECT_EQ(parser.messages()[1].author, "assistant");
  EXPECT_EQ(parser.messages()[1].ended_by, "<|return|>");
  EXPECT_EQ(parser.text_of_channel("final"), "2 + 2 = 4.");
  EXPECT_TRUE(parser.problems().empty());
  EXPECT_EQ(parser.stop_tokens(), (std::vector<uint32_t>{200002, 200012}));
}

TEST(HarmonyParser, ToolCallWithRecipientInEitherPlace) {
  REAL_TOKENIZER_OR_SKIP();
  for (const char* output : {"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"a\":1}<|call|>",
                             " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"a\":1}<|call|>",
                             "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{\"a\":1}<|call|>"}) {
    StreamParser parser(*tokenizer);
    for (uint32_t id : ids(*tokenizer, output)) parser.push(id);
    ASSERT_EQ(parser.messages().size(), 1u) << output;
    const auto& m = parser.messages()[0];
    EXPECT_EQ(m.recipient, "functions.get_weather") << output;
    EXPECT_EQ(m.channel, "commentary") << output;
    EXPECT_EQ(m.content_type, "<|constrain|>json") << output;
    EXPECT_EQ(m.content, "{\"a\":1}");
    EXPECT_EQ(m.ended_by, "<|call|>");
    EXPECT_TRUE(parser.stopped());
    EXPECT_TRUE(parser.problems().empty()) << parser.problems()[0];
  }
}

TEST(HarmonyParser, SplitCharactersComeOutWhole) {
  REAL_TOKENIZER_OR_SKIP();
  StreamParser parser(*tokenizer);
  parser.push(200005);  // <|channel|>
  for (uint32_t id : ids(*tokenizer, "final<|message|>")) parser.push(id);
  // "日本語 👨‍👩‍👧" spelled as byte tokens one at a time: no delta ever holds half a character.
  const std::string text = "\u65e5\u672c\u8a9e \U0001F468\u200d\U0001F469\u200d\U0001F467";
  std::string streamed;
  for (unsigned char byte : text) {
    const auto update = parser.push(*tokenizer->encode(std::string(1, static_cast<char>(byte))).begin());
    streamed += update.content_delta;
    EXPECT_EQ(text.compare(0, streamed.size(), streamed), 0);
  }
  parser.push(200002);
  EXPECT_EQ(parser.text_of_channel("final"), text);
}

TEST(HarmonyParser, MalformedStreamsAreReportedNotFatal) {
  REAL_TOKENIZER_OR_SKIP();
  {  // no stop token at all, cut off mid-message
    StreamParser parser(*tokenizer);
    for (uint32_t id : ids(*tokenizer, "<|channel|>final<|message|>partial answer")) parser.push(id);
    parser.finish();
    ASSERT_EQ(parser.messages().size(), 1u);
    EXPECT_EQ(parser.messages()[0].content, "partial answer");
    EXPECT_EQ(parser.messages()[0].ended_by, "");
    EXPECT_FALSE(parser.stopped());
  }
  {  // <|start|> inside content, a stray <|message|>, text outside messages, ids past the vocabulary
    StreamParser parser(*tokenizer);
    for (uint32_t id : ids(*tokenizer, "<|channel|>analysis<|message|>think<|start|>assistant<|channel|>final"
                                       "<|message|>a<|message|>b<|end|>stray text<|return|>more"))
      parser.push(id);
    parser.push(201000);
    parser.push(9999999);
    parser.finish();
    ASSERT_EQ(parser.messages().size(), 2u);
    EXPECT_EQ(parser.messages()[0].content, "think");
    EXPECT_EQ(parser.messages()[0].ended_by, "");
    EXPECT_EQ(parser.messages()[1].content, "ab");
    EXPECT_GE(parser.problems().size(), 4u);
  }
  {  // <|end|> and a new <|channel|> without <|start|>
    StreamParser parser(*tokenizer);
    for (uint32_t id : ids(*tokenizer, "<|channel|>analysis<|message|>x<|end|><|channel|>final<|message|>y<|return|>"))
      parser.push(id);
    ASSERT_EQ(parser.messages().size(), 2u);
    EXPECT_EQ(parser.messages()[1].channel, "final");
    EXPECT_EQ(parser.messages()[1].content, "y");
    EXPECT_EQ(parser.problems().size(), 1u);
  }
  {  // random garbage ids never crash
    StreamParser parser(*tokenizer, std::nullopt);
    uint64_t state = 1;
    for (int i = 0; i < 20000; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const uint32_t id = (state >> 33) % 8 == 0 ? 200000 + static_cast<uint32_t>((state >> 40) % 19)
                                                  : static_cast<uint32_t>((state >> 33) % 201100);
      parser.push(id);
    }
    parser.finish();
    EXPECT_FALSE(parser.problems().empty());
  }
}

}  // namespace
}  // namespace gptoss::harmony
