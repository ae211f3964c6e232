#include "kubectl/render/shipment.h"

#include <cstdint>
#include <cstdio>
#include <iterator>

#include "kubectl/render/terminal_safe.h"

namespace kubedist::kubectl {
namespace {

// "a, b, c and 4 more", each item terminal-safe.
std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kListedFiles; ++i) out += (i ? ", " : "") + terminal_safe(items[i]);
  if (items.size() > kListedFiles) out += " and " + std::to_string(items.size() - kListedFiles) + " more";
  return out;
}

}  // namespace

std::string byte_size(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) v /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::vector<std::string> describe_shipment(const WorkdirArchive& archive, const std::string& dir) {
  uint64_t total = 0;
  for (const auto& [path, size] : archive.sizes) total += size;
  std::vector<std::string> lines;
  lines.push_back("shipping " + terminal_safe(dir) + ": " + std::to_string(archive.files) +
                  (archive.files == 1 ? " file, " : " files, ") + byte_size(total));
  uint64_t rest = total;
  for (size_t i = 0; i < archive.sizes.size() && i < kListedFiles; ++i) {
    lines.push_back("  " + terminal_safe(archive.sizes[i].first) + "  " + byte_size(archive.sizes[i].second));
    rest -= archive.sizes[i].second;
  }
  if (archive.sizes.size() > kListedFiles) {
    lines.push_back("  and " + std::to_string(archive.sizes.size() - kListedFiles) + " more (" + byte_size(rest) + ")");
  }
  if (!archive.withheld.empty()) {
    lines.push_back("left home, as they look like credentials: " + listed(archive.withheld) +
                    " (to ship one on purpose, add !PATH to .kubedistignore)");
  }
  if (!archive.outside_links.empty()) {
    const size_t n = archive.outside_links.size();
    lines.push_back(std::to_string(n) + (n == 1 ? " link points" : " links point") + " out of " + terminal_safe(dir) +
                    ", shipped as " + (n == 1 ? "a link" : "links") +
                    " and not followed (in the pods it resolves there, not to your files): " +
                    listed(archive.outside_links));
  }
  return lines;
}

}  // namespace kubedist::kubectl
