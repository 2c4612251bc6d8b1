#!/usr/bin/env bash
# placeholder: GPU suite
echo "no GPU suite yet"; exit 77
