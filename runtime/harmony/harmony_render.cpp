#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "runtime/harmony/harmony_messages.h"
#include "runtime/tokenizer/tokenizer.h"

namespace gptoss::harmony {

const char* role_name(Role role) {
  switch (role) {
    case Role::System: return "system";
    case Role::Developer: return "developer";
    case Role::User: return "user";
    case Role::Assistant: return "assistant";
    case Role::Tool: return "tool";
  }
  return "user";
}

const char* effort_name(ReasoningEffort effort) {
  switch (effort) {
    case ReasoningEffort::Low: return "low";
    case ReasoningEffort::Medium: return "medium";
    case ReasoningEffort::High: return "high";
  }
  return "medium";
}

Message Message::system(SystemContent content) {
  Message m;
  m.role = Role::System;
  m.content = std::move(content);
  return m;
}
Message Message::developer(DeveloperContent content) {
  Message m;
  m.role = Role::Developer;
  m.content = std::move(content);
  return m;
}
Message Message::developer(std::string text) {
  Message m;
  m.role = Role::Developer;
  m.content = std::move(text);
  return m;
}
Message Message::user(std::string text) {
  Message m;
  m.role = Role::User;
  m.content = std::move(text);
  return m;
}
Message Message::assistant(std::string text, std::string channel) {
  Message m;
  m.role = Role::Assistant;
  m.channel = std::move(channel);
  m.content = std::move(text);
  return m;
}
Message Message::tool_call(std::string recipient, std::string arguments, std::string channel,
                           std::optional<std::string> content_type) {
  Message m = assistant(std::move(arguments), std::move(channel));
  m.recipient = std::move(recipient);
  m.content_type = std::move(content_type);
  return m;
}
Message Message::tool_result(std::string tool_name, std::string output, std::string channel) {
  Message m;
  m.role = Role::Tool;
  m.author_name = std::move(tool_name);
  m.recipient = "assistant";
  m.channel = std::move(channel);
  m.content = std::move(output);
  return m;
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

bool is_enum(const nlohmann::ordered_json& schema) {
  return schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty();
}

// "default: ..." as harmony writes it: enum strings bare, other strings quoted, the rest as JSON.
std::string default_comment(const nlohmann::ordered_json& schema) {
  const auto& value = schema["default"];
  if (value.is_string()) return is_enum(schema) ? "default: " + value.get<std::string>()
                                                : "default: \"" + value.get<std::string>() + "\"";
  return "default: " + value.dump();
}

bool is_nullable(const nlohmann::ordered_json& schema) {
  return schema.contains("nullable") && schema["nullable"].is_boolean() && schema["nullable"].get<bool>();
}

// A piece of the rendered conversation: text, or a special token written as its text.
struct Segment {
  bool special;
  std::string text;
};

class Renderer {
 public:
  void special(const char* token) { segments_.push_back({true, token}); }
  // Each piece of text is encoded on its own, as harmony's renderer does (the boundaries fall
  // where the pre-tokenizer splits anyway, but this keeps the ids identical by construction).
  void text(std::string text) {
    if (!text.empty()) segments_.push_back({false, std::move(text)});
  }

  void message(const Message& m, bool has_function_tools) {
    special("<|start|>");
    if (m.role == Role::Tool) {
      if (!m.author_name || m.author_name->empty())
        throw std::invalid_argument("harmony: a tool message needs the tool's name as author_name");
      text(*m.author_name);
    } else {
      text(role_name(m.role));
      if (m.author_name) text(":" + *m.author_name);
    }
    if (m.recipient && *m.recipient != "all") text(" to=" + *m.recipient);
    if (m.channel) {
      special("<|channel|>");
      text(*m.channel);
    }
    if (m.content_type) {
      static const std::string kConstrain = "<|constrain|>";
      if (m.content_type->starts_with(kConstrain)) {
        text(" ");
        special("<|constrain|>");
        text(m.content_type->substr(kConstrain.size()));
      } else {
        text(" " + *m.content_type);
      }
    }
    special("<|message|>");
    if (const auto* s = std::get_if<std::string>(&m.content)) {
      text(*s);
    } else if (const auto* system = std::get_if<SystemContent>(&m.content)) {
      if (m.role != Role::System) throw std::invalid_argument("harmony: SystemContent outside a system message");
      text(render_system_content(*system, has_function_tools));
    } else if (const auto* developer = std::get_if<DeveloperContent>(&m.content)) {
      if (m.role != Role::Developer) throw std::invalid_argument("harmony: DeveloperContent outside a developer message");
      text(render_developer_content(*developer));
    }
    special(m.role == Role::Assistant && m.recipient ? "<|call|>" : "<|end|>");
  }

  void conversation(const std::vector<Message>& messages, const RenderOptions& options) {
    bool has_function_tools = false;
    for (const auto& m : messages)
      if (const auto* developer = std::get_if<DeveloperContent>(&m.content))
        for (const auto& ns : developer->tools)
          if (ns.name == "functions" && !ns.tools.empty()) has_function_tools = true;
    bool last_assistant_is_final = false;
    for (auto it = messages.rbegin(); it != messages.rend(); ++it)
      if (it->role == Role::Assistant) {
        last_assistant_is_final = it->channel == "final";
        break;
      }
    size_t first_final = messages.size();
    for (size_t i = 0; i < messages.size(); ++i)
      if (messages[i].channel == "final") {
        first_final = i;
        break;
      }
    const bool drop_analysis = options.auto_drop_analysis && last_assistant_is_final;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (drop_analysis && i < first_final && messages[i].channel == "analysis") continue;
      message(messages[i], has_function_tools);
    }
  }

  std::string to_text() const {
    std::string out;
    for (const auto& s : segments_) out += s.text;
    return out;
  }

  std::vector<uint32_t> to_tokens(const Tokenizer& tokenizer) const {
    std::vector<uint32_t> out;
    for (const auto& s : segments_) {
      if (!s.special) {
        tokenizer.encode_ordinary_into(s.text, out);
        continue;
      }
      const auto id = tokenizer.special_id(s.text);
      if (!id) throw std::invalid_argument("harmony: the tokenizer has no special token " + s.text);
      out.push_back(*id);
    }
    return out;
  }

 private:
  std::vector<Segment> segments_;
};

Renderer render(const std::vector<Message>& messages, std::optional<Role> next_role, const RenderOptions& options) {
  Renderer r;
  r.conversation(messages, options);
  if (next_role) {
    r.special("<|start|>");
    r.text(role_name(*next_role));
  }
  return r;
}

}  // namespace

std::string json_schema_to_typescript(const nlohmann::ordered_json& schema, const std::string& indent) {
  if (!schema.is_object()) return "any";
  if (schema.contains("oneOf") && schema["oneOf"].is_array()) {
    std::string out;
    for (const auto& variant : schema["oneOf"]) {
      out += "\n" + indent + " | ";
      std::string type = json_schema_to_typescript(variant, indent + "   ");
      if (is_nullable(variant) && type.find("null") == std::string::npos) type += " | null";
      out += type;
      std::vector<std::string> comments;
      if (variant.contains("description") && variant["description"].is_string())
        comments.push_back(variant["description"].get<std::string>());
      if (variant.contains("default")) comments.push_back(default_comment(variant));
      if (!comments.empty()) out += " // " + join(comments, " ");
    }
    return out;
  }
  if (schema.contains("type") && schema["type"].is_array()) {
    std::vector<std::string> types;
    for (const auto& t : schema["type"])
      if (t.is_string()) types.push_back(t.get<std::string>() == "integer" ? "number" : t.get<std::string>());
    if (!types.empty()) return join(types, " | ");
  }
  if (!schema.contains("type") || !schema["type"].is_string()) return "any";
  const std::string type = schema["type"].get<std::string>();
  if (type == "string") {
    if (is_enum(schema)) {
      std::vector<std::string> values;
      for (const auto& v : schema["enum"])
        if (v.is_string()) values.push_back("\"" + v.get<std::string>() + "\"");
      if (!values.empty()) return join(values, " | ");
    }
    return "string";
  }
  if (type == "number" || type == "integer") return "number";
  if (type == "boolean") return "boolean";
  if (type == "array")
    return schema.contains("items") ? json_schema_to_typescript(schema["items"], indent) + "[]" : "Array<any>";
  if (type != "object") return "any";

  std::string out;
  if (schema.contains("description") && schema["description"].is_string())
    out += indent + "// " + schema["description"].get<std::string>() + "\n";
  out += "{\n";
  std::vector<std::string> required;
  if (schema.contains("required") && schema["required"].is_array())
    for (const auto& r : schema["required"])
      if (r.is_string()) required.push_back(r.get<std::string>());
  if (schema.contains("properties") && schema["properties"].is_object()) {
    for (const auto& [key, property] : schema["properties"].items()) {
      const bool is_required = std::find(required.begin(), required.end(), key) != required.end();
      if (property.contains("title") && property["title"].is_string())
        out += indent + "// " + property["title"].get<std::string>() + "\n" + indent + "//\n";
      if (property.contains("description") && property["description"].is_string())
        out += indent + "// " + property["description"].get<std::string>() + "\n";
      if (property.contains("examples") && property["examples"].is_array() && !property["examples"].empty()) {
        out += indent + "// Examples:\n";
        for (const auto& example : property["examples"])
          if (example.is_string()) out += indent + "// - \"" + example.get<std::string>() + "\"\n";
      }
      out += indent + key + (is_required ? "" : "?") + ": ";
      std::string property_type = json_schema_to_typescript(property, indent + "    ");
      if (is_nullable(property) && property_type.find("null") == std::string::npos) property_type += " | null";
      out += property_type + ",";
      if (property.contains("default")) out += " // " + default_comment(property);
      out += "\n";
    }
  }
  out += indent + "}";
  return out;
}

std::string render_tool_namespace(const ToolNamespace& ns) {
  std::vector<std::string> lines;
  lines.push_back("## " + ns.name + "\n");
  if (ns.description)
    for (const auto& line : lines_of(*ns.description)) lines.push_back(ns.tools.empty() ? line : "// " + line);
  if (!ns.tools.empty()) {
    lines.push_back("namespace " + ns.name + " {\n");
    for (const auto& tool : ns.tools) {
      for (const auto& line : lines_of(tool.description)) lines.push_back("// " + line);
      if (tool.parameters) lines.push_back("type " + tool.name + " = (_: " + json_schema_to_typescript(*tool.parameters) + ") => any;\n");
      else lines.push_back("type " + tool.name + " = () => any;\n");
    }
    lines.push_back("} // namespace " + ns.name);
  }
  return join(lines, "\n");
}

namespace {
std::string tools_section(const std::vector<ToolNamespace>& namespaces) {
  std::vector<std::string> sections{"# Tools"};
  for (const auto& ns : namespaces) sections.push_back(render_tool_namespace(ns));
  return join(sections, "\n\n");
}
}  // namespace

std::string render_system_content(const SystemContent& system, bool conversation_has_function_tools) {
  std::vector<std::string> sections;
  std::vector<std::string> top;
  if (system.model_identity) top.push_back(*system.model_identity);
  if (system.knowledge_cutoff) top.push_back("Knowledge cutoff: " + *system.knowledge_cutoff);
  if (system.conversation_start_date) top.push_back("Current date: " + *system.conversation_start_date);
  if (!top.empty()) sections.push_back(join(top, "\n"));
  if (system.reasoning_effort) sections.push_back(std::string("Reasoning: ") + effort_name(*system.reasoning_effort));
  if (!system.tools.empty()) sections.push_back(tools_section(system.tools));
  if (!system.valid_channels.empty()) {
    std::string channels = "# Valid channels: " + join(system.valid_channels, ", ") + ".";
    if (system.channel_required) channels += " Channel must be included for every message.";
    if (conversation_has_function_tools) channels += "\nCalls to these tools must go to the commentary channel: 'functions'.";
    sections.push_back(channels);
  }
  return join(sections, "\n\n");
}

std::string render_developer_content(const DeveloperContent& developer) {
  std::vector<std::string> sections;
  if (developer.instructions) {
    sections.push_back("# Instructions");
    sections.push_back(*developer.instructions);
  }
  if (!developer.tools.empty()) sections.push_back(tools_section(developer.tools));
  return join(sections, "\n\n");
}

std::string render_conversation(const std::vector<Message>& messages, const RenderOptions& options) {
  return render(messages, std::nullopt, options).to_text();
}

std::string render_conversation_for_completion(const std::vector<Message>& messages, Role next_role,
                                               const RenderOptions& options) {
  return render(messages, next_role, options).to_text();
}

std::vector<uint32_t> render_conversation_tokens(const Tokenizer& tokenizer, const std::vector<Message>& messages,
                                                 const RenderOptions& options) {
  return render(messages, std::nullopt, options).to_tokens(tokenizer);
}

std::vector<uint32_t> render_conversation_for_completion_tokens(const Tokenizer& tokenizer,
                                                                const std::vector<Message>& messages, Role next_role,
                                                                const RenderOptions& options) {
  return render(messages, next_role, options).to_tokens(tokenizer);
}

}  // namespace gptoss::harmony
