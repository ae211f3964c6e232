#include "kubectl/render/workdir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <optional>

#include "kubectl/render/credentials.h"
#include "kubectl/render/ignore.h"
#include "kubectl/render/shipment.h"
#include "kubectl/render/terminal_safe.h"

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

// Reads the regular file at p, of size bytes by the lstat() before, as it is now: opened without following a link
// (one put there since is refused, never read through) and without blocking on a fifo put there.
Result<std::string> read_regular(const fs::path& p, uint64_t size, bool follow_link) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_link ? 0 : O_NOFOLLOW));
  if (fd < 0) return Error::invalid("cannot read " + p.string() + ": " + std::strerror(errno));
  struct stat st {};
  std::string data;
  bool changed = ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != size;
  if (!changed) {
    data.resize(size);
    size_t got = 0;
    while (got < size) {
      const ssize_t n = ::read(fd, data.data() + got, size - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        ::close(fd);
        return Error::invalid("cannot read " + p.string() + ": " + std::strerror(e));
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    char extra;
    changed = got != size || ::read(fd, &extra, 1) > 0;
  }
  ::close(fd);
  if (changed) return Error::invalid(p.string() + " changed while it was read: run again when it is written");
  return data;
}

// Where the absolute path leads, each link on the way followed (at most 40, as the kernel does) by reading the link
// alone, never a file; what does not exist is taken as it is, so a dangling link resolves to where it would lead.
// None for a loop.
std::optional<fs::path> resolve(const fs::path& path) {
  std::deque<fs::path> rest(path.begin(), path.end());
  fs::path done = "/";
  for (int hops = 0; !rest.empty();) {
    const fs::path part = rest.front();
    rest.pop_front();
    if (part == "/" || part == "." || part.empty()) continue;
    if (part == "..") {
      done = done.parent_path();
      continue;
    }
    std::error_code ec;
    const fs::path next = done / part;
    if (!fs::is_symlink(fs::symlink_status(next, ec))) {
      done = next;
      continue;
    }
    if (++hops > 40) return std::nullopt;
    const fs::path target = fs::read_symlink(next, ec);
    if (ec) return std::nullopt;
    rest.insert(rest.begin(), target.begin(), target.end());
    if (target.is_absolute()) done = "/";
  }
  return done;
}

// Padded into 512-byte blocks, as the archive holds it.
uint64_t padded(uint64_t bytes) { return (bytes + 511) / 512 * 512; }

struct Walker {
  fs::path root;
  fs::path real_root;  // root with its links resolved, to tell where a link's target lies
  IgnoreRules rules;         // .gitignore and .kubedistignore
  IgnoreRules kubedistignore;  // .kubedistignore alone: its '!' rules are the one way to ship a credential
  WorkdirArchive out;
  uint64_t bytes = 1024;  // the archive's size so far by lstat(), the two end blocks included
  bool over = false;      // past kMaxArchiveBytes: no file is read any more, sizes are still counted

  // Whether path (below real_root) leads into the working directory.
  bool resolves_inside(const fs::path& path) const {
    const auto to = resolve(path);
    const fs::path inside = to ? to->lexically_relative(real_root) : fs::path();
    return !inside.empty() && *inside.begin() != "..";
  }

  Result<void> add_ignore_file(const std::string& rel_dir, const fs::path& p) {
    // An ignore file may be a link to another one of the directory (a shared .gitignore); one out of the directory
    // is not read: no link is followed out of it, and skipping its rules silently could ship what they exclude.
    struct stat st {};
    if (::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && !resolves_inside(p)) {
      return Error::invalid(p.string() + " is a link out of the working directory: not read; copy the file in "
                            "instead");
    }
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
    if (static_cast<uint64_t>(st.st_size) > kMaxIgnoreFileBytes) {
      return Error::invalid(p.string() + " is over " + byte_size(kMaxIgnoreFileBytes) + ": not an ignore file to read");
    }
    auto text = read_regular(p, static_cast<uint64_t>(st.st_size), true);
    if (!text) return text.error();
    rules.add(rel_dir, *text);
    if (p.filename() == ".kubedistignore") kubedistignore.add(rel_dir, *text);
    return {};
  }

  Result<void> add_link(const std::string& rel, const struct stat& st) {
    std::error_code ec;
    fs::path target = fs::read_symlink(root / rel, ec);
    if (ec) return Error::invalid("cannot read link " + (root / rel).string() + ": " + ec.message());
    if (!resolves_inside(real_root / rel)) {  // a loop counts as out: it resolves nowhere
      out.outside_links.push_back(rel + " -> " + target.string());
    } else if (target.is_absolute()) {
      // /home/me/proj/data -> data: the pods have no /home/me/proj.
      target = resolve(real_root / rel)->lexically_relative((real_root / rel).parent_path());
    }
    auto h = tar_header(rel, '2', 0777, 0, st.st_mtime, target.string());
    if (!h) return h.error();
    out.tar += *h;
    bytes += 512;
    return {};
  }

  Result<void> add_file(const std::string& rel, const struct stat& st) {
    const auto size = static_cast<uint64_t>(st.st_size);
    bytes += 512 + padded(size);
    out.files++;
    out.sizes.emplace_back(rel, size);
    over = over || bytes > kMaxArchiveBytes;
    if (over) return {};  // the error names the largest files; their contents are not needed for that
    auto data = read_regular(root / rel, size, false);
    if (!data) return data.error();
    auto h = tar_header(rel, '0', st.st_mode & 07777, size, st.st_mtime);
    if (!h) return h.error();
    out.tar += *h;
    out.tar += *data;
    out.tar.append(padded(size) - size, '\0');
    return {};
  }

  Result<void> walk(const std::string& rel_dir) {
    const fs::path dir = rel_dir.empty() ? root : root / rel_dir;
    for (const char* name : {".gitignore", ".kubedistignore"}) {
      if (auto r = add_ignore_file(rel_dir, dir / name); !r) return r;
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
      if (name == ".git" || rules.ignored(rel, is_dir)) continue;
      if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;  // sockets, fifos, devices
      // Left home unless the last .kubedistignore rule that names it is a '!' one (.gitignore's do not count: a
      // "!.env.example" there is about git, not about shipping).
      if (looks_like_credential(rel, is_dir) && kubedistignore.verdict(rel, is_dir) != false) {
        out.withheld.push_back(is_dir ? rel + "/" : rel);
        continue;
      }
      if (is_dir) {
        if (!over) {
          auto h = tar_header(rel + "/", '5', st.st_mode & 07777, 0, st.st_mtime);
          if (!h) return h.error();
          out.tar += *h;
        }
        bytes += 512;
        if (auto r = walk(rel); !r) return r;
      } else if (S_ISLNK(st.st_mode)) {
        if (auto r = add_link(rel, st); !r) return r;
      } else if (auto r = add_file(rel, st); !r) {
        return r;
      }
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
  Walker w;
  w.root = fs::path(dir);
  w.real_root = fs::canonical(w.root, ec);
  if (ec) return Error::invalid("--workdir " + dir + ": " + ec.message());
  if (auto r = w.walk(""); !r) return r.error();
  w.out.tar.append(1024, '\0');  // two zero blocks end a tar archive
  std::stable_sort(w.out.sizes.begin(), w.out.sizes.end(), [](auto& a, auto& b) { return a.second > b.second; });
  if (w.over) {
    std::string largest;
    for (size_t i = 0; i < std::min<size_t>(3, w.out.sizes.size()); ++i) {
      largest += (i ? ", " : "") + terminal_safe(w.out.sizes[i].first) + " (" + byte_size(w.out.sizes[i].second) +
                 ")";
    }
    return Error::invalid("the working directory " + dir + " is over " + byte_size(w.bytes - 1024) +
                          " to ship, the limit is " + byte_size(kMaxArchiveBytes) + " (largest: " + largest +
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
