#include "kubectl/render/workdir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kubectl/render/ignore.h"

namespace kubedist::kubectl {
namespace {

namespace fs = std::filesystem;

// width - 1 octal digits and a NUL, as ustar wants numbers.
void put_octal(char* field, size_t width, uint64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string human_size(uint64_t bytes) {
  return bytes < 1024 * 1024 ? std::to_string((bytes + 1023) / 1024) + " KiB" : mib(bytes);
}

Result<std::string> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return Error::invalid("cannot read " + p.string() + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct Walker {
  fs::path root;
  IgnoreRules rules;
  WorkdirArchive out;

  Result<void> add_entry(const std::string& rel, const struct stat& st) {
    const unsigned mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode)) {
      auto h = tar_header(rel + "/", '5', mode, 0, st.st_mtime);
      if (!h) return h.error();
      out.tar += *h;
      return {};
    }
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      const fs::path target = fs::read_symlink(root / rel, ec);
      if (ec) return Error::invalid("cannot read link " + (root / rel).string() + ": " + ec.message());
      auto h = tar_header(rel, '2', 0777, 0, st.st_mtime, target.string());
      if (!h) return h.error();
      out.tar += *h;
      return {};
    }
    auto data = read_all(root / rel);
    if (!data) return data.error();
    auto h = tar_header(rel, '0', mode, data->size(), st.st_mtime);
    if (!h) return h.error();
    out.tar += *h;
    out.tar += *data;
    out.tar.append((512 - data->size() % 512) % 512, '\0');
    out.files++;
    out.sizes.emplace_back(rel, data->size());
    return {};
  }

  Result<void> walk(const std::string& rel_dir) {
    const fs::path dir = rel_dir.empty() ? root : root / rel_dir;
    for (const char* name : {".gitignore", ".kubedistignore"}) {
      if (fs::is_regular_file(dir / name)) {
        auto text = read_all(dir / name);
        if (!text) return text.error();
        rules.add(rel_dir, *text);
      }
    }
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      names.push_back(it->path().filename().string());
    }
    if (ec) return Error::invalid("cannot list " + dir.string() + ": " + ec.message());
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
      struct stat st {};
      if (::lstat((root / rel).c_str(), &st) != 0) continue;  // gone meanwhile
      const bool is_dir = S_ISDIR(st.st_mode);
      if ((is_dir && name == ".git") || rules.ignored(rel, is_dir)) continue;
      if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;  // sockets, fifos, devices
      if (auto r = add_entry(rel, st); !r) return r;
      if (is_dir) {
        if (auto r = walk(rel); !r) return r;
      }
      if (out.tar.size() > kMaxArchiveBytes + kChunkBytes) break;  // over the limit already: stop reading
    }
    return {};
  }
};

}  // namespace

Result<std::string> tar_header(const std::string& path, char typeflag, unsigned mode, uint64_t size, int64_t mtime,
                               const std::string& link_target) {
  char h[512];
  std::memset(h, 0, sizeof h);
  std::string name = path, prefix;
  if (name.size() > 100) {  // ustar: prefix (155) + '/' + name (100)
    // The first '/' after which at most 100 characters remain (a directory's trailing '/' is part of its name).
    size_t cut = std::string::npos;
    for (size_t i = 0; i + 1 < name.size(); ++i) {
      if (name[i] == '/' && name.size() - i - 1 <= 100) {
        cut = i;
        break;
      }
    }
    if (cut == std::string::npos || cut > 155) {
      return Error::invalid(path + ": path too long to ship (ustar allows 255 characters); add it to .kubedistignore");
    }
    prefix = name.substr(0, cut);
    name = name.substr(cut + 1);
  }
  if (link_target.size() > 100) return Error::invalid(path + ": link target too long to ship; add it to .kubedistignore");
  std::memcpy(h, name.data(), name.size());
  put_octal(h + 100, 8, mode);
  put_octal(h + 108, 8, 0);
  put_octal(h + 116, 8, 0);
  put_octal(h + 124, 12, size);
  put_octal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(mtime, 0)));
  h[156] = typeflag;
  std::memcpy(h + 157, link_target.data(), link_target.size());
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memcpy(h + 345, prefix.data(), prefix.size());
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put_octal(h + 148, 7, sum);  // six digits, a NUL, then the space already there

  return std::string(h, sizeof h);
}

Result<WorkdirArchive> archive_workdir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error::invalid("--workdir " + dir + ": no such directory");
  Walker w{fs::path(dir), {}, {}};
  if (auto r = w.walk(""); !r) return r.error();
  w.out.tar.append(1024, '\0');  // two zero blocks end a tar archive
  std::sort(w.out.sizes.begin(), w.out.sizes.end(), [](auto& a, auto& b) { return a.second > b.second; });
  if (w.out.tar.size() > kMaxArchiveBytes) {
    std::string largest;
    for (size_t i = 0; i < std::min<size_t>(3, w.out.sizes.size()); ++i) {
      largest += (i ? ", " : "") + w.out.sizes[i].first + " (" + human_size(w.out.sizes[i].second) + ")";
    }
    return Error::invalid("the working directory " + dir + " is over " + mib(w.out.tar.size() - 1024) +
                          " to ship, the limit is " + mib(kMaxArchiveBytes) + " (largest: " + largest +
                          "): list what the job does not need in .kubedistignore, or build an image with your code "
                          "and run with --image IMAGE --no-workdir");
  }
  return w.out;
}

std::vector<std::string> split_chunks(const std::string& tar) {
  std::vector<std::string> out;
  for (size_t off = 0; off < tar.size(); off += kChunkBytes) out.push_back(tar.substr(off, kChunkBytes));
  return out;
}

}  // namespace kubedist::kubectl
