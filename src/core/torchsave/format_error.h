#pragma once
// FormatError, what every torchsave reader throws for a file that is not what torch.save() writes,
// or is truncated or corrupt; and `shown`, how a name from such a file enters a message.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crosstrain::torchsave {

// The message names what is wrong, not the file (callers add the path). It is one line of at most
// a few hundred characters whatever the file holds: names from it go through `shown`.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `text` (a key, a class or record name from a file) for a one-line message: bytes outside printable
// ASCII as \xNN, and at most `max` characters of it, the rest counted ("module.module.... (4200000
// bytes)").
std::string shown(std::string_view text, size_t max = 80);

}  // namespace crosstrain::torchsave
