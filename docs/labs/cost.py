# %% [markdown]
# # 代价实验（第 8 章）
#
# 本实验在构建时执行。正在编写。

# %%
import torch

print(torch.__version__)
