#!/bin/sh
# Run inside the sandbox: sh "$(terraform output -raw workspace_dir)/hello.sh"
echo "hello from $(pwd)"
