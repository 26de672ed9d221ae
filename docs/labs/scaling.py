# %% [markdown]
# # 缩放实验（第 4 章）
#
# 本实验在构建时执行。正在编写。

# %%
import torch

print(torch.__version__)
