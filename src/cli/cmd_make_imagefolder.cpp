// `crosstrain make-imagefolder`: an ImageFolder tree of JPEGs from IDX/CIFAR data or patterns.
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "cli/flag_checks.h"
#include "tools/datatools/imagefolder_writer.h"
#include "report/envelope.h"
#include "report/output.h"
#include "report/terminal.h"
#include "report/units.h"

namespace crosstrain::cli {
namespace {

struct MakeImageFolderFlags {
  datatools::ImageFolderWriteOptions write;
  std::string size = "500x375";
  std::string json_path;
};

void parse_size(const std::string& text, int& w, int& h) {
  if (text == "source" || text == "0x0") {
    w = h = 0;
    return;
  }
  int a = 0, b = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &a, &x, &b, &extra) != 3 || (x != 'x' && x != 'X') || a <= 0 || b <= 0)
    throw std::invalid_argument("--size: expected WxH (e.g. 500x375) or 'source', got '" + text + "'");
  w = a;
  h = b;
}

void run(MakeImageFolderFlags& f) {
  parse_size(f.size, f.write.width, f.write.height);
  f.write.validate();
  report::ProgressLine progress(report::stderr_is_terminal());
  auto r = datatools::write_imagefolder(f.write, [&](int64_t done, int64_t total) {
    progress.update("make-imagefolder: " + std::to_string(done) + "/" + std::to_string(total) + " images");
  });
  progress.clear();
  if (!f.json_path.empty()) {
    const nlohmann::json doc = {{"root", r.root},
                                {"source", f.write.source},
                                {"train_images", r.train_images},
                                {"val_images", r.val_images},
                                {"classes", r.classes},
                                {"width", r.width},
                                {"height", r.height},
                                {"bytes", r.bytes},
                                {"seconds", r.seconds}};
    report::write_json(report::with_envelope("make-imagefolder", doc), f.json_path);
  }
  if (!report::json_to_stdout(f.json_path))
    std::cout << "wrote " << r.train_images << " train + " << r.val_images << " val JPEGs (" << r.classes << " classes, "
              << r.width << "x" << r.height << ", " << report::format_bytes(r.bytes) << ") to " << r.root << " in "
              << report::format_fixed(r.seconds, 1) << " s\n";
}

}  // namespace

void add_make_imagefolder_command(CLI::App& app) {
  auto flags = std::make_shared<MakeImageFolderFlags>();
  datatools::ImageFolderWriteOptions& o = flags->write;
  auto* cmd = app.add_subcommand("make-imagefolder", "Write a class-per-folder JPEG tree (ROOT/train, ROOT/val) for tests and benchmarks");
  cmd->add_option("--from", o.source, "Source: synthetic, idx:DIR or cifar:DIR")->capture_default_str();
  cmd->add_option("--out", o.root, "Output root")->required();
  cmd->add_option("--size", flags->size, "Image size WxH, or 'source' to keep the source's")->capture_default_str();
  cmd->add_option("--train", o.train_count, "Training images (0 = all; synthetic: 1000)")->check(int_range(0, 1e9));
  cmd->add_option("--val", o.val_count, "Validation images (0 = all; synthetic: 200)")->check(int_range(0, 1e9));
  cmd->add_option("--classes", o.classes, "Classes (synthetic only)")->capture_default_str()->check(int_range(1, 1000));
  cmd->add_option("--quality", o.quality, "JPEG quality 1..100")->capture_default_str()->check(int_range(1, 100));
  cmd->add_option("--threads", o.threads, "Encoding threads (0 = all cores)")->check(int_range(0, 1024));
  cmd->add_flag("--overwrite", o.overwrite, "Replace existing ROOT/train and ROOT/val");
  add_json_option(cmd, flags->json_path);
  cmd->callback([flags] { run(*flags); });
}

}  // namespace crosstrain::cli
