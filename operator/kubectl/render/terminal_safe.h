// Text from outside the plugin (pod logs, file names) made harmless for a terminal before it is printed.
#pragma once

#include <string>
#include <string_view>

namespace kubedist::kubectl {

// Printable ASCII, tabs and well-formed UTF-8 stay as they are; every other byte (ESC and the other C0 controls,
// DEL, the C1 controls U+0080-U+009F, bytes of malformed UTF-8) becomes the four characters \xNN, so a line can
// neither move the cursor, retitle or reprogram the terminal, nor hide itself. A trailing '\r' (CRLF) is dropped.
std::string terminal_safe(std::string_view text);

}  // namespace kubedist::kubectl
