# bash completion for precompress                          -*- shell-script -*-

_precompress() {
  local cur prev words cword
  _init_completion || return

  local opts="--no-gzip --no-brotli --zstd --formats --gzip-level --gzip-engine
    --brotli-quality --zstd-level --max-ratio --min-size --skip-ext --include
    --exclude --files-from --follow --force --fsync --shard --cache-dir --cache-max-size
    --cache-url --cache-auth-file --cache-url-read-only --cache-url-timeout --memory-limit
    --jobs -j --manifest --output-dir --dictionary-from --dictionary-name
    --django-manifest --deltas
    --dry-run -n --check --quiet -q --verbose -v
    --progress --json --json-lines --help -h --version -V"

  if [[ $cword -eq 1 && $cur != -* ]]; then
    COMPREPLY=($(compgen -W "merge-manifests server-config" -- "$cur"))
  fi
  if [[ ${words[1]} == merge-manifests ]]; then
    _filedir json
    return
  fi
  if [[ ${words[1]} == server-config ]]; then
    case $prev in
      server-config) COMPREPLY=($(compgen -W "nginx apache caddy" -- "$cur")) ;;
      --part) COMPREPLY=($(compgen -W "http location" -- "$cur")) ;;
      --location) ;;
      --alias) _filedir -d ;;
      *) if [[ $cur == -* ]]; then
           COMPREPLY=($(compgen -W "--part --location --alias" -- "$cur"))
         else
           _filedir json
         fi ;;
    esac
    return
  fi

  case $prev in
    --formats)
      local IFS=,
      COMPREPLY=($(compgen -W "gz br zst gz,br gz,br,zst" -- "$cur"))
      return ;;
    --progress)
      COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
      return ;;
    --gzip-engine)
      COMPREPLY=($(compgen -W "zlib libdeflate zopfli" -- "$cur"))
      return ;;
    --shard)
      COMPREPLY=($(compgen -W "auto" -- "$cur"))
      return ;;
    --gzip-level)
      COMPREPLY=($(compgen -W "1 2 3 4 5 6 7 8 9" -- "$cur"))
      return ;;
    --brotli-quality)
      COMPREPLY=($(compgen -W "0 1 2 3 4 5 6 7 8 9 10 11" -- "$cur"))
      return ;;
    --zstd-level)
      COMPREPLY=($(compgen -W "$(seq 1 19)" -- "$cur"))
      return ;;
    --manifest | --django-manifest)
      _filedir json
      return ;;
    --deltas)
      COMPREPLY=($(compgen -W "dcb dcz dcb,dcz" -- "$cur"))
      return ;;
    --cache-dir | --output-dir | --dictionary-from)
      _filedir -d
      return ;;
    --files-from | --cache-auth-file)
      _filedir
      return ;;
    --max-ratio | --min-size | --skip-ext | --include | --exclude | \
      --cache-max-size | --memory-limit | --jobs | -j | --dictionary-name | \
      --cache-url | --cache-url-timeout)
      return ;;
  esac

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return
  fi
  _filedir
} &&
  complete -F _precompress precompress
