#include "replay/trace_reader.h"

#include <algorithm>

#include "common/json_fields.h"
#include "replay/line_source.h"

namespace simreplay::replay {

namespace {

using Sign = JsonFields::Sign;

Status ParseSample(const JsonFields& f, SampleRecord* r) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("rank", &r->rank));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("epoch", &r->epoch));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("index", &r->index));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("batch", &r->batch));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("worker", &r->worker, Sign::kAny));
  if (r->worker < -1) return f.Error("field 'worker' must be >= -1 (-1 = main process)");
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("t_start_ns", &r->t_start_ns, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("read_ns", &r->read_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("decode_ns", &r->decode_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("augment_ns", &r->augment_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("read_bytes", &r->read_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("out_bytes", &r->out_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetString("format", &r->format));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("width", &r->width));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("height", &r->height));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("frames", &r->frames));
  std::string stages = "split";
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("stages", &stages));
  if (stages != "split" && stages != "unsplit") {
    return f.Error("field 'stages' must be \"split\" or \"unsplit\", found \"" + stages + "\"");
  }
  r->unsplit = stages == "unsplit";
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("cpu_ns", &r->cpu_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("wall_ns", &r->wall_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("minflt", &r->minflt));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalString("hash", &r->hash));
  return Status::Ok();
}

Status ParseBatch(const JsonFields& f, BatchRecord* r) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("rank", &r->rank));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("epoch", &r->epoch));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("batch", &r->batch));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("worker", &r->worker, Sign::kAny));
  if (r->worker < -1) return f.Error("field 'worker' must be >= -1 (-1 = main process)");
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("size", &r->size));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("collate_ns", &r->collate_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("t_ready_ns", &r->t_ready_ns, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("wait_ns", &r->wait_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("pin_ns", &r->pin_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("h2d_ns", &r->h2d_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("h2d_bytes", &r->h2d_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("t_next_start_ns", &r->t_next_start_ns, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("bytes", &r->bytes));
  return Status::Ok();
}

Status ParseStep(const JsonFields& f, StepRecord* r) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("rank", &r->rank));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("step", &r->step));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("t_start_ns", &r->t_start_ns, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("compute_ns", &r->compute_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("comm_ns", &r->comm_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("step_ns", &r->step_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("micro_batches", &r->micro_batches));
  if (r->micro_batches < 1) return f.Error("field 'micro_batches' must be >= 1");
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("cpu_ns", &r->cpu_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("accel_ns", &r->accel_ns));
  return Status::Ok();
}

Status ParseWorker(const JsonFields& f, WorkerRecord* r) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("rank", &r->rank));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("worker", &r->worker, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("pid", &r->pid));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("t_ns", &r->t_ns, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("rss_bytes", &r->rss_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("pss_bytes", &r->pss_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("cpu_ns", &r->cpu_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("main_thread_cpu_ns", &r->main_thread_cpu_ns, Sign::kAny));
  if (r->main_thread_cpu_ns < -1) return f.Error("field 'main_thread_cpu_ns' must be >= 0, or -1 when unreadable");
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("io_read_bytes", &r->io_read_bytes));
  return Status::Ok();
}

Status ParseHost(const JsonFields& f, HostRecord* r) {
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("t_ns", &r->t_ns, Sign::kAny));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("mem_used_bytes", &r->mem_used_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetInt("cpu_busy_ns", &r->cpu_busy_ns));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("mem_total_bytes", &r->mem_total_bytes));
  SIMREPLAY_RETURN_IF_ERROR(f.GetOptionalInt("mem_peak_bytes", &r->mem_peak_bytes));
  return Status::Ok();
}

template <typename Record>
Result<TraceRecord> ParseAs(Status (*parse)(const JsonFields&, Record*), const JsonFields& f) {
  Record record;
  Status s = parse(f, &record);
  if (!s.ok()) return s;
  return TraceRecord(std::move(record));
}

}  // namespace

Result<TraceRecord> ParseRecordLine(const std::string& line, const std::string& where) {
  auto json = ParseJson(line, where);
  if (!json.ok()) return json.status();
  if (!json->is_object())
    return Status::InvalidArgument(where + ": expected a JSON object, found " + json->type_name());
  JsonFields f(*json, where);
  std::string type;
  SIMREPLAY_RETURN_IF_ERROR(f.GetString("type", &type));
  if (type == "sample") return ParseAs(ParseSample, f);
  if (type == "batch") return ParseAs(ParseBatch, f);
  if (type == "step") return ParseAs(ParseStep, f);
  if (type == "worker") return ParseAs(ParseWorker, f);
  if (type == "host") return ParseAs(ParseHost, f);
  if (type == "header") return f.Error("a second header record");
  return TraceRecord(OtherRecord{type, std::move(*json)});
}

TraceReader::TraceReader(std::string path, std::unique_ptr<LineSource> source)
    : path_(std::move(path)), source_(std::move(source)) {}

TraceReader::~TraceReader() = default;

Result<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  auto source = LineSource::Open(path);
  if (!source.ok()) return source.status();
  std::unique_ptr<TraceReader> reader(new TraceReader(path, std::move(*source)));
  Status s = reader->ReadHeader();
  if (!s.ok()) return s;
  return reader;
}

Status TraceReader::ReadHeader() {
  std::string line;
  bool had_newline = false;
  auto more = source_->ReadLine(&line, &had_newline);
  if (!more.ok()) return more.status();
  line_number_ = 1;
  std::string where = path_ + ":1";
  if (!*more) return Status::InvalidArgument(where + ": empty file: expected a header record");
  auto json = ParseJson(line, where);
  if (!json.ok()) return json.status();
  // Compared as JSON, not through value("type", ""): that throws when "type" is not a string.
  if (!json->is_object() || !json->contains("type") || (*json)["type"] != "header") {
    return Status::InvalidArgument(where + ": the first record must be {\"type\":\"header\",...}");
  }
  JsonFields f(*json, where);
  std::string schema;
  SIMREPLAY_RETURN_IF_ERROR(f.GetString("schema", &schema));
  if (schema != kTraceSchema) {
    return f.Error("wrong schema version: expected \"" + std::string(kTraceSchema) + "\", found \"" + schema + "\"");
  }
  if (json->contains("manifest")) {
    if (!(*json)["manifest"].is_object()) return f.Error("field 'manifest' must be an object");
    header_.manifest = (*json)["manifest"];
  }
  return Status::Ok();
}

Result<bool> TraceReader::Next(TraceRecord* record) {
  std::string line;
  while (true) {
    bool had_newline = false;
    auto more = source_->ReadLine(&line, &had_newline);
    if (!more.ok()) return more.status();
    if (!*more) {
      if (source_->truncated())
        warnings_.push_back(path_ + ": compressed stream ends early (killed writer?); using the records before it");
      return false;
    }
    ++line_number_;
    std::string where = path_ + ":" + std::to_string(line_number_);
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    auto parsed = ParseRecordLine(line, where);
    if (!parsed.ok()) {
      bool final_line = !had_newline || source_->truncated();
      if (final_line) {
        // A killed capture leaves a partial last line: keep everything before it.
        std::string probe;
        bool nl = false;
        auto after = source_->ReadLine(&probe, &nl);
        if (after.ok() && !*after) {
          warnings_.push_back(where + ": truncated final line ignored");
          return false;
        }
      }
      return parsed.status();
    }
    if (auto* other = std::get_if<OtherRecord>(&*parsed)) {
      static const char* kKnownOther[] = {"event", "footer", "collective"};
      bool known = std::find(std::begin(kKnownOther), std::end(kKnownOther), other->type) != std::end(kKnownOther);
      if (!known && std::find(warned_types_.begin(), warned_types_.end(), other->type) == warned_types_.end()) {
        warned_types_.push_back(other->type);
        warnings_.push_back(where + ": unknown record type \"" + other->type + "\" skipped (and any later ones)");
      }
      if (!known) continue;
    }
    *record = std::move(*parsed);
    return true;
  }
}

}  // namespace simreplay::replay
