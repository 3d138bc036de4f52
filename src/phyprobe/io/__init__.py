"""Reading and writing videos (:mod:`.video`, PyAV). The suffixes a folder's videos are found by live here, without
importing PyAV, so that listing a folder is cheap."""

# What FFmpeg (through PyAV) decodes: the common containers, MPEG transport streams (broadcast, camcorders, HLS
# segments), 3GP, FLV, ASF/WMV, Ogg, and raw H.264 / HEVC elementary streams. Not .webp: FFmpeg opens a WebP as a
# still image and cannot decode an animated one, and a folder's .webp files are mostly thumbnails of its videos.
VIDEO_SUFFIXES = (
    ".mp4",
    ".mov",
    ".m4v",
    ".mkv",
    ".webm",
    ".avi",
    ".mpg",
    ".mpeg",
    ".gif",
    ".ts",
    ".mts",
    ".m2ts",
    ".3gp",
    ".flv",
    ".wmv",
    ".ogv",
    ".h264",
    ".264",
    ".hevc",
)
