// Mutations of a text for the readers' tests: a few bytes deleted, replaced or inserted at random places.
#pragma once

#include <random>
#include <string>

namespace kubedist::testing {

// text with 1 to max_edits edits, each a byte deleted, replaced or inserted (new bytes drawn from alphabet).
inline std::string mutate(std::string text, std::mt19937& rng, const std::string& alphabet, int max_edits) {
  const int edits = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_edits));
  for (int e = 0; e < edits; ++e) {
    const size_t at = rng() % (text.size() + 1);
    const char c = alphabet[rng() % alphabet.size()];
    switch (rng() % 3) {
      case 0:
        if (at < text.size()) text.erase(at, 1);
        break;
      case 1:
        if (at < text.size()) text[at] = c;
        break;
      default:
        text.insert(at, 1, c);
        break;
    }
  }
  return text;
}

}  // namespace kubedist::testing
