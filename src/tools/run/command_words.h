#pragma once
// A command given as one string (`crosstrain align --a "python train.py --device cpu"`), split into
// words as a POSIX shell would split a simple command, without expanding anything: blanks separate
// words; single quotes keep everything; double quotes keep everything but \" \\ \$ \`; a backslash
// outside quotes keeps the next character. Leading NAME=VALUE words are environment assignments.
#include <map>
#include <string>
#include <vector>

namespace crosstrain::run {

struct CommandWords {
  std::map<std::string, std::string> env;  // leading NAME=VALUE assignments
  std::vector<std::string> argv;
};

// std::invalid_argument for an unterminated quote or a string without a program.
CommandWords split_command(const std::string& text);

// True when `text` reads as align's key=value side ("device=cpu precision=bf16"): every word holds
// '=' (a command has a program word without one).
bool looks_like_key_values(const std::string& text);

}  // namespace crosstrain::run
