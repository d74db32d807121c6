// A container image's files as the dependency search reads them (file_tree.h), recorded while the
// image walk reads its layers top first (image.cpp): the names, kinds and link targets of the entries
// the image keeps, the dynamic sections of its ELF files and the text of its ld.so.conf files.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "hipguard/dependencies.h"
#include "inputs/archive.h"
#include "inputs/file_tree.h"

namespace hipguard {

class ImageTree : public FileTree {
 public:
  // `label`: how findings name the image's files, "IMAGE!" + their path ("IMAGE!TAG!" for one of several).
  explicit ImageTree(std::string label) : label_(std::move(label)) {}

  // An entry the image keeps (Overlay::visible), `name` normalized ("usr/lib/x"): `filetype` AE_IF*,
  // `hardlink` the normalized name of the entry of its layer it links to, or "". The first entry of a
  // name wins: layers are read top first.
  void entry(const std::string& name, unsigned filetype, const std::string& hardlink);
  // The link `name`: a symbolic link's target as stored (relative to its directory, or absolute), a
  // hard link's the normalized name of the entry it links to. Recorded as an entry when none is (a
  // plain archive's walk has no filter that records its entries first) and `name` is no member of an
  // archive inside this one (no '!').
  void link(const std::string& name, const std::string& target, bool hard);
  // A regular file handed over (recorded as an entry as link() says), with its dynamic section when
  // it is an ELF file (its bytes, valid during the call).
  void member(const std::string& name, Bytes bytes);
  // Whether the file `name` is one whose text the search reads (/etc/ld.so.conf and the files of
  // /etc/ld.so.conf.d, where images put theirs).
  static bool wants_text(const std::string& name);
  void set_text(const std::string& name, std::string text);
  // The program the image's config starts, as the config names it ("/usr/bin/app", "app"): a file of
  // that path or name is kept whatever it holds (a script is a program too).
  void expect_program(const std::string& program);
  // The current layer is read: its regular files that are neither ELF files, ld.so.conf files, the
  // program nor named as Tensile's kernel files (a compressed bundle is no ELF file) are forgotten (the
  // search never opens them; most of an image's files are such).
  void end_layer();

  // The paths of the image's ELF files ("/usr/lib/x.so"), sorted.
  std::vector<std::string> elf_files() const;

  std::optional<Found> find(const std::string& at) const override;
  std::vector<std::string> list(const std::string& at) const override;
  ElfInfo elf(const Found& file) const override;
  std::string text(const Found& file) const override;
  std::string name_of(const std::string& at) const override;

 private:
  enum class Kind { File, Directory, Symlink, Hardlink };
  struct Entry {
    Kind kind;
    std::string target;  // a symlink's as stored, a hard link's normalized name
    size_t id;
  };
  // The entry named `path` ("usr/lib"); a directory no entry names but some entry lies below is one too.
  const Entry* lookup(const std::string& path, Entry* implicit) const;
  // A hard link's file: the entry it links to, when the image keeps it.
  std::string file_name(const std::string& path) const;

  std::string label_;
  std::string program_path_, program_name_;  // normalized, without the leading '/'; or a bare name
  std::vector<std::string> layer_files_;     // regular files of the current layer
  std::map<std::string, Entry> entries_;     // ordered: a directory's entries follow it
  size_t next_id_ = 0;
  std::unordered_map<std::string, ElfInfo> elves_;
  std::unordered_map<std::string, std::string> texts_;
};

// The side files of a walk whose members are named `prefix` + path: the links, and the ld.so.conf
// texts of the files the tree has, recorded in `tree`; everything passed on to `outer` (null: none).
ArchiveReader::SideFiles recording_side_files(ImageTree* tree, const std::string& prefix,
                                              const ArchiveReader::SideFiles* outer);

// HG123 for each rocBLAS and hipBLASLt of `tree` (but the files in `asked`) whose Tensile directory,
// looked for as the library looks for it (`options`: the Env a container runs it with), is missing or
// holds no code object: it fails at its first GEMM, whatever its own code objects say.
std::vector<Diagnostic> kernel_directory_findings(const ImageTree& tree, DependencyOptions options,
                                                  std::set<std::pair<uint64_t, uint64_t>> asked);

}  // namespace hipguard
