"""Reading and writing videos (:mod:`.video`, PyAV). The suffixes a folder's videos are found by live here, without
importing PyAV, so that listing a folder is cheap."""

VIDEO_SUFFIXES = (".mp4", ".mov", ".m4v", ".mkv", ".webm", ".avi", ".mpg", ".mpeg", ".gif")
