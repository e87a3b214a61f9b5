#pragma once
// The harmony chat format of gpt-oss: messages, system and developer contents, and rendering a
// conversation to text or to token ids. See docs/tokenizer.md and the openai/harmony format notes:
//
//   <|start|>{role}[ to={recipient}][<|channel|>{channel}][ {content type}]<|message|>{content}<|end|>
//
// A tool call from the assistant ends with <|call|> instead of <|end|>.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace gptoss {
class Tokenizer;
}

namespace gptoss::harmony {

enum class Role { System, Developer, User, Assistant, Tool };
enum class ReasoningEffort { Low, Medium, High };

const char* role_name(Role role);  // "system", "developer", ..., "tool"
const char* effort_name(ReasoningEffort effort);

struct ToolDescription {
  std::string name;
  std::string description;
  std::optional<nlohmann::ordered_json> parameters;  // JSON schema of the single argument object
};

// A namespace of tools: "functions" in a developer message, "browser"/"python" in a system one.
struct ToolNamespace {
  std::string name;
  std::optional<std::string> description;
  std::vector<ToolDescription> tools;
};

struct SystemContent {
  std::optional<std::string> model_identity = "You are ChatGPT, a large language model trained by OpenAI.";
  std::optional<ReasoningEffort> reasoning_effort = ReasoningEffort::Medium;
  std::optional<std::string> knowledge_cutoff = "2024-06";
  std::optional<std::string> conversation_start_date;  // "YYYY-MM-DD"
  std::vector<std::string> valid_channels = {"analysis", "commentary", "final"};
  bool channel_required = true;
  std::vector<ToolNamespace> tools;  // built-in tools
};

struct DeveloperContent {
  std::optional<std::string> instructions;
  std::vector<ToolNamespace> tools;  // usually one namespace, "functions"
};

struct Message {
  Role role = Role::User;
  std::optional<std::string> author_name;  // a tool message's author, e.g. "functions.get_weather"
  std::optional<std::string> recipient;    // e.g. "functions.get_weather" (a tool call), "assistant"
  std::optional<std::string> channel;      // "analysis", "commentary", "final"
  std::optional<std::string> content_type;  // e.g. "<|constrain|>json" or "json"
  std::variant<std::string, SystemContent, DeveloperContent> content;

  static Message system(SystemContent content);
  static Message developer(DeveloperContent content);
  static Message developer(std::string text);  // raw developer text, no "# Instructions" heading
  static Message user(std::string text);
  static Message assistant(std::string text, std::string channel = "final");
  // The assistant calling a tool: "<|start|>assistant to=functions.x<|channel|>commentary <|constrain|>json<|message|>{args}<|call|>".
  static Message tool_call(std::string recipient, std::string arguments, std::string channel = "commentary",
                           std::optional<std::string> content_type = "<|constrain|>json");
  // A tool's answer: "<|start|>functions.x to=assistant<|channel|>commentary<|message|>{output}<|end|>".
  static Message tool_result(std::string tool_name, std::string output, std::string channel = "commentary");
};

struct RenderOptions {
  // Drop analysis messages before the first final message when the last assistant message is a
  // final one: earlier chain of thought is not shown to the model again (harmony's default).
  bool auto_drop_analysis = true;
};

// Text with the special tokens spelled out ("<|start|>user<|message|>Hi<|end|>").
std::string render_conversation(const std::vector<Message>& messages, const RenderOptions& options = {});
// The same followed by "<|start|>{next role}": the prompt for generating the next turn.
std::string render_conversation_for_completion(const std::vector<Message>& messages, Role next_role = Role::Assistant,
                                               const RenderOptions& options = {});

// The same as token ids. Message text is encoded as ordinary text, so a special token written
// inside a user's message stays text and cannot forge structure.
std::vector<uint32_t> render_conversation_tokens(const Tokenizer& tokenizer, const std::vector<Message>& messages,
                                                 const RenderOptions& options = {});
std::vector<uint32_t> render_conversation_for_completion_tokens(const Tokenizer& tokenizer,
                                                                const std::vector<Message>& messages,
                                                                Role next_role = Role::Assistant,
                                                                const RenderOptions& options = {});

// The system content text and the tools section, for tests and for tools that need them alone.
std::string render_system_content(const SystemContent& system, bool conversation_has_function_tools);
std::string render_developer_content(const DeveloperContent& developer);
std::string render_tool_namespace(const ToolNamespace& ns);
std::string json_schema_to_typescript(const nlohmann::ordered_json& schema, const std::string& indent = "");

}  // namespace gptoss::harmony
